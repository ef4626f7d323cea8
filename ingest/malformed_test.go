package ingest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/dataset"
)

// table is a CSV file being edited: header and records.
type table struct {
	header []string
	rows   [][]string
}

func readTable(t *testing.T, path string) *table {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return &table{header: recs[0], rows: recs[1:]}
}

func (tb *table) col(t *testing.T, name string) int {
	t.Helper()
	for i, h := range tb.header {
		if h == name {
			return i
		}
	}
	t.Fatalf("no column %q", name)
	return -1
}

// set changes the cell of data row i (at file line i+2).
func (tb *table) set(t *testing.T, i int, name, v string) *table {
	tb.rows[i][tb.col(t, name)] = v
	return tb
}

func (tb *table) bytes() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(tb.header)
	w.WriteAll(tb.rows)
	return b.Bytes()
}

func (tb *table) clone() *table {
	c := &table{header: append([]string(nil), tb.header...)}
	for _, r := range tb.rows {
		c.rows = append(c.rows, append([]string(nil), r...))
	}
	return c
}

// dropCol removes a column.
func (tb *table) dropCol(t *testing.T, name string) *table {
	i := tb.col(t, name)
	tb.header = append(tb.header[:i:i], tb.header[i+1:]...)
	for k, r := range tb.rows {
		tb.rows[k] = append(r[:i:i], r[i+1:]...)
	}
	return tb
}

// TestMalformedInputs gives every kind of bad input and checks the
// documented error or the excluded-row report with file:line:column.
func TestMalformedInputs(t *testing.T) {
	base := readTable(t, filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "linear_op.csv"))
	attn := readTable(t, filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "attention.csv"))
	emb := base.col(t, "time_stats.emb.median") + 1 // 1-based column
	pre := 0                                        // the first prefill row of attention.csv
	for attn.rows[pre][attn.col(t, "is_prefill")] != "True" {
		pre++
	}
	full := base.bytes()
	lastLine := bytes.LastIndexByte(full[:len(full)-1], '\n')

	type excl struct {
		line, column int
		op, reason   string
	}
	for _, tc := range []struct {
		name  string
		file  string // under <tmp>/h100/qwen3-30b-a3b/
		data  []byte
		fatal string // error substring, or "" when the run succeeds
		excl  []excl // excluded rows the manifest must list
		notes string // a note the input must carry
	}{
		{name: "truncated file", data: full[:lastLine+40],
			excl: []excl{{line: len(base.rows) + 1, column: -1, reason: reasonFieldCount}}},
		{name: "header only", data: full[:bytes.IndexByte(full, '\n')+1], fatal: "linear_op.csv:1: header only, no data rows"},
		{name: "empty file", data: nil, fatal: "empty file: no header line"},
		{name: "text in a time cell", data: base.clone().set(t, 1, "time_stats.emb.median", "abc").bytes(),
			excl: []excl{{line: 3, column: emb, op: "emb", reason: reasonNotNumber}}},
		{name: "text in a key cell", data: base.clone().set(t, 0, "num_tokens", "many").bytes(),
			excl: []excl{{line: 2, column: base.col(t, "num_tokens") + 1, reason: reasonNotNumber}}},
		{name: "NaN time", data: base.clone().set(t, 0, "time_stats.emb.median", "nan").bytes(),
			excl: []excl{{line: 2, column: emb, op: "emb", reason: reasonNaN}}},
		{name: "negative time", data: base.clone().set(t, 0, "time_stats.emb.median", "-0.01").bytes(),
			excl: []excl{{line: 2, column: emb, op: "emb", reason: reasonNegative}}},
		{name: "zero time", data: base.clone().set(t, 0, "time_stats.emb.min", "0").bytes(),
			excl: []excl{{line: 2, column: emb - 3, op: "emb", reason: reasonZero}}},
		{name: "min above median", data: base.clone().set(t, 0, "time_stats.emb.min", "5").bytes(),
			excl: []excl{{line: 2, column: emb - 3, op: "emb", reason: reasonMinMedian}}},
		{name: "median above max", data: base.clone().set(t, 0, "time_stats.emb.max", "0.000001").set(t, 0, "time_stats.emb.min", "0.0000001").bytes(),
			excl: []excl{{line: 2, column: emb - 2, op: "emb", reason: reasonMedianMax}}},
		{name: "incomplete statistics", data: base.clone().set(t, 0, "time_stats.emb.std", "").bytes(),
			excl: []excl{{line: 2, column: emb, op: "emb", reason: reasonIncomplete}}},
		{name: "unterminated quote", data: append(append([]byte(nil), full...), []byte("\"1,2\n")...),
			fatal: "linear_op.csv:" + itoa(len(base.rows)+2) + ":1: unterminated quoted field"},
		{name: "unterminated quote mid-file", data: append(append([]byte(nil), full[:bytes.IndexByte(full, '\n')+1]...), append([]byte("\"x"), full[bytes.IndexByte(full, '\n')+1:]...)...),
			fatal: "linear_op.csv:2:1: unterminated quoted field"},
		{name: "fractional num_tokens", data: base.clone().set(t, 0, "num_tokens", "12.5").bytes(),
			excl: []excl{{line: 2, column: base.col(t, "num_tokens") + 1, reason: reasonNotWhole}}},
		{name: "num_tokens beyond any batch", data: base.clone().set(t, 0, "num_tokens", "1e20").bytes(),
			excl: []excl{{line: 2, column: base.col(t, "num_tokens") + 1, reason: reasonBadFeature}}},
		{name: "integral num_tokens written as a float", data: base.clone().set(t, 0, "num_tokens", base.rows[0][base.col(t, "num_tokens")]+".0").bytes()},
		{name: "fractional kv_cache_size", file: "attention.csv", data: attn.clone().set(t, pre, "kv_cache_size", "100.25").bytes(),
			excl: []excl{{line: pre + 2, column: attn.col(t, "kv_cache_size") + 1, reason: "not an integer"}}},
		{name: "exact duplicate rows", data: append(append([]byte(nil), full...), full[bytes.IndexByte(full, '\n')+1:]...),
			notes: itoa(len(base.rows)) + " exact duplicate rows dropped (same cells as an earlier row; first at lines " + itoa(len(base.rows)+2)},
		{name: "mixed measurement types", data: base.clone().set(t, 5, "measurement_type", "KERNEL_ONLY").bytes(),
			fatal: "linear_op.csv:7:" + itoa(base.col(t, "measurement_type")+1) + ": measurement_type KERNEL_ONLY differs from CUDA_EVENT on line 2"},
		{name: "kernel-only name without column", file: "linear_op_kernel_only.csv", data: base.clone().dropCol(t, "measurement_type").bytes(),
			notes: "taken as KERNEL_ONLY"},
		{name: "unknown measurement type", data: base.clone().set(t, 0, "measurement_type", "WALL").bytes(), fatal: `unknown measurement_type "WALL"`},
		{name: "unknown family", data: []byte("a,b,c\n1,2,3\n"), fatal: "unknown profile family"},
		{name: "operators of two families", data: []byte("time_stats.attn_prefill.median,time_stats.moe_shuffling.median\n1,2\n"), fatal: "operators of several families"},
		{name: "missing key column", data: base.clone().dropCol(t, "num_tensor_parallel_workers").bytes(), fatal: `missing required column "num_tensor_parallel_workers"`},
		{name: "missing statistic column", data: base.clone().dropCol(t, "time_stats.emb.std").bytes(), fatal: `missing required column "time_stats.emb.std"`},
		{name: "unreadable header", data: []byte("\"a,b\nc\"x,d\n1,2\n"), fatal: "unreadable header"},
		{name: "bad list cell", file: "attention.csv", data: attn.clone().set(t, pre, "seq_lens", "[1, x]").bytes(),
			excl: []excl{{line: pre + 2, column: attn.col(t, "seq_lens") + 1, reason: reasonNotList}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "h100", "qwen3-30b-a3b")
			os.MkdirAll(dir, 0o755)
			name := tc.file
			if name == "" {
				name = "linear_op.csv"
			}
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "ds")
			m, err := Ingest([]string{path}, out, Options{})
			if tc.fatal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fatal) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want %q naming %s", err, tc.fatal, path)
				}
				if _, serr := os.Stat(filepath.Join(out, dataset.ManifestFile)); serr == nil {
					t.Fatal("a failed run left a manifest")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in := m.Inputs[0]
			for _, e := range tc.excl {
				found := false
				for _, g := range in.Excluded {
					if (g.Column == e.column || e.column < 0) && g.Op == e.op && strings.HasPrefix(g.Reason, e.reason) && g.Lines[0] == e.line {
						found = true
					}
				}
				if !found {
					t.Errorf("excluded %+v not in %+v", e, in.Excluded)
				}
			}
			if len(tc.excl) == 0 && in.ExcludedRows != 0 {
				t.Errorf("unexpected exclusions %+v", in.Excluded)
			}
			if tc.notes != "" && !strings.Contains(strings.Join(append(in.Notes, in.MeasurementNote), "; "), tc.notes) {
				t.Errorf("notes %q lack %q", append(in.Notes, in.MeasurementNote), tc.notes)
			}
			if _, err := dataset.Load(out); err != nil {
				t.Fatal(err)
			}
			// The report names every exclusion as path:line:column.
			var rep bytes.Buffer
			WriteReport(&rep, out, m)
			for _, e := range tc.excl {
				want := path + ":" + itoa(e.line) + ":"
				if e.column > 0 {
					want += itoa(e.column) + ":"
				}
				if !strings.Contains(rep.String(), want) {
					t.Errorf("report lacks %q:\n%s", want, rep.String())
				}
			}
			// --strict turns any exclusion into a failure naming the place.
			_, err = Ingest([]string{path}, filepath.Join(t.TempDir(), "strict"), Options{Strict: true})
			if len(tc.excl) > 0 {
				var re *RowError
				if err == nil || !errors.As(err, &re) || re.Path != path || re.Line != tc.excl[0].line || !strings.Contains(err.Error(), "--strict") {
					t.Errorf("strict: %v", err)
				}
			} else if err != nil {
				t.Errorf("strict: %v", err)
			}
		})
	}
}

// TestConflictingDuplicates adds a copy of a row with three times the
// timings: both samples are kept and flagged.
func TestConflictingDuplicates(t *testing.T) {
	base := readTable(t, filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "linear_op.csv"))
	dup := append([]string(nil), base.rows[0]...)
	for _, s := range []string{"min", "max", "mean", "median"} {
		i := base.col(t, "time_stats.emb."+s)
		dup[i] = "9" + dup[i] // 0.0x -> 90.0x: far apart
	}
	base.rows = append(base.rows, dup)
	dir := filepath.Join(t.TempDir(), "h100", "qwen3-30b-a3b")
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "linear_op.csv")
	os.WriteFile(path, base.bytes(), 0o644)
	out := filepath.Join(t.TempDir(), "ds")
	m, err := Ingest([]string{path}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var c *dataset.Conflict
	for i := range m.Conflicts {
		if strings.Contains(m.Conflicts[i].Key, "emb[") {
			c = &m.Conflicts[i]
		}
	}
	if c == nil || c.Samples != 2 || c.At[0].Lines[0] != 2 || c.At[0].Lines[1] != len(base.rows)+1 {
		t.Fatalf("conflicts %+v", m.Conflicts)
	}
	d, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	flagged := 0
	for _, s := range d.Samples {
		if s.Conflict {
			flagged++
			if s.Key.Op != "emb" {
				t.Errorf("flagged %v", s.Key)
			}
		}
	}
	if flagged != 2 || m.DuplicatedShapes < 1 {
		t.Errorf("%d flagged samples, %d duplicated shapes", flagged, m.DuplicatedShapes)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
