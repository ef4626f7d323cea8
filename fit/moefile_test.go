package fit

import (
	"bytes"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/ingest"
	"github.com/ftk-dev/ftk/spec"
)

// csvTable is a profile CSV in memory.
type csvTable struct {
	header []string
	rows   [][]string
}

func readCSVTable(t testing.TB, data []byte) *csvTable {
	t.Helper()
	recs, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return &csvTable{header: recs[0], rows: recs[1:]}
}

func (c *csvTable) bytes(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(c.header)
	w.WriteAll(c.rows)
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (c *csvTable) col(t testing.TB, name string) int {
	t.Helper()
	for i, h := range c.header {
		if h == name {
			return i
		}
	}
	t.Fatalf("no column %q", name)
	return -1
}

// scaleTimes multiplies the time columns (time_stats.<op>.min/max/mean/
// median/std) of rec by f; ops limits it to those operators (nil: all).
func (c *csvTable) scaleTimes(t testing.TB, rec []string, f float64, ops ...string) []string {
	t.Helper()
	out := append([]string(nil), rec...)
	for i, h := range c.header {
		if !strings.HasPrefix(h, "time_stats.") || strings.HasSuffix(h, ".count") {
			continue
		}
		if len(ops) > 0 {
			hit := false
			for _, op := range ops {
				hit = hit || strings.HasPrefix(h, "time_stats."+op+".")
			}
			if !hit {
				continue
			}
		}
		v, err := strconv.ParseFloat(rec[i], 64)
		if err != nil {
			t.Fatalf("column %s: %v", h, err)
		}
		out[i] = strconv.FormatFloat(v*f, 'g', -1, 64)
	}
	return out
}

// tileCSV repeats the data rows of a CSV until it has n of them, every
// copy after the first a further sweep with its times scaled by
// 1+0.1*sin(copy).
func tileCSV(t testing.TB, data []byte, n int) []byte {
	c := readCSVTable(t, data)
	orig := c.rows
	var rows [][]string
	for cp := 0; len(rows) < n; cp++ {
		for _, r := range orig {
			if len(rows) == n {
				break
			}
			if cp > 0 {
				r = c.scaleTimes(t, r, 1+0.1*math.Sin(float64(cp)))
			}
			rows = append(rows, r)
		}
	}
	c.rows = rows
	return c.bytes(t)
}

// ingestDir ingests the profiles under dir and selects the CUDA_EVENT rows.
func ingestDir(t testing.TB, dir string) *TrainingSet {
	t.Helper()
	out := filepath.Join(t.TempDir(), "dataset")
	if _, err := ingest.Ingest([]string{dir}, out, ingest.Options{Device: "h800", Model: "qwen3-30b-a3b"}); err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := FromDataset(ds, spec.CUDAEvent)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// TestFitMoEAsBrought is issue 14's file, built from the real H800
// Qwen3-30B-A3B-tiny moe.csv: the TP2/EP1 rows cut to a 4-row group,
// shuffling times at EP8 doubled (a condition the rows vary with), and the
// TP4 rows measured again in a second sweep 40% slower. It fits; the thin
// keys are marked and answered by the fallback or the pooled forest; EP is
// kept (predictions follow it); no repeat is dropped.
func TestFitMoEAsBrought(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(profiles, h800Tiny, "moe.csv"))
	if err != nil {
		t.Fatal(err)
	}
	c := readCSVTable(t, data)
	tp, ep, tok, ctx := c.col(t, "num_tensor_parallel_workers"), c.col(t, "expert_parallel_size"), c.col(t, "num_tokens"), c.col(t, "gating_runtime_context")
	var rows, sweep2 [][]string
	for _, r := range c.rows {
		if r[tp] == "2" && r[ep] == "1" && !(r[ctx] == spec.GatingPrefillHot && (r[tok] == "1" || r[tok] == "2" || r[tok] == "4" || r[tok] == "8")) {
			continue // the 4-row group
		}
		if r[ep] == "8" {
			r = c.scaleTimes(t, r, 2, spec.OpMoEShuffling)
		}
		rows = append(rows, r)
		if r[tp] == "4" {
			sweep2 = append(sweep2, c.scaleTimes(t, r, 1.4))
		}
	}
	c.rows = append(rows, sweep2...)
	dir := filepath.Join(t.TempDir(), "profiles")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "moe.csv"), c.bytes(t), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := ingestDir(t, dir)
	var log bytes.Buffer
	b, err := Fit(ts, Options{Seed: 1, Trees: 16, Log: &log})
	if err != nil {
		t.Fatalf("fit refused the file: %v", err)
	}
	t.Log(log.String())

	thin := 0
	for _, o := range ts.Ops {
		p, _ := b.Predictor(o.Key)
		m := p.Meta()
		// No repeat is dropped: every row is trained on and scored.
		if m.TrainRows != len(o.Rows) || len(m.Dropped) != 0 || m.AllRows.Rows != len(o.Rows) {
			t.Errorf("%s: trained on %d of %d rows, scored %d, dropped %v", o.Key, m.TrainRows, len(o.Rows), m.AllRows.Rows, m.Dropped)
		}
		if o.Key.TP == 4 && (m.Repeats.Disagreeing == 0 || m.Repeats.DisagreeSpread < 1.35) {
			t.Errorf("%s: the 40%% slower sweep is not reported: %+v", o.Key, m.Repeats)
		}
		if o.Key.TP == 2 && o.Key.EP == 1 {
			thin++
			if len(o.Rows) != 4 {
				t.Errorf("%s: %d rows, want the 4-row group", o.Key, len(o.Rows))
			}
			if m.Note == "" || !strings.Contains(m.Note, "thin key") || (m.Model != bundle.ModelFallback && m.Model != bundle.ModelPooled) {
				t.Errorf("%s: thin key not marked: model %s, note %q", o.Key, m.Model, m.Note)
			}
			if !strings.Contains(log.String(), o.Key.String()) {
				t.Errorf("fit's log does not name %s", o.Key)
			}
		}
	}
	if thin != 2 { // shuffling and grouped GEMM
		t.Errorf("%d thin TP2/EP1 keys, want 2", thin)
	}
	var sum bytes.Buffer
	if err := b.WriteSummary(&sum); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sum.String(), "thin keys") {
		t.Errorf("summary does not mark the thin keys:\n%s", sum.String())
	}

	// EP is kept: the choice is recorded, and shuffling predictions at
	// EP8 follow the doubled times.
	found := false
	for _, ch := range b.Meta().Conditions {
		if ch.Op == spec.OpMoEShuffling {
			found = true
			if !strings.Contains(strings.Join(ch.Conditions, ","), "ep") || ch.Keys < 10 {
				t.Errorf("shuffling conditions: %+v", ch)
			}
		}
	}
	if !found {
		t.Error("no condition choice recorded for moe_shuffling")
	}
	for _, tpv := range []int{1, 8} {
		var at [2]*bundle.Predictor
		for i, e := range []int{1, 8} {
			for _, k := range b.Keys() {
				if k.Op == spec.OpMoEShuffling && k.TP == tpv && k.EP == e {
					at[i], _ = b.Predictor(k)
				}
			}
		}
		if at[0] == nil || at[1] == nil {
			t.Fatalf("TP%d: no shuffling predictors at EP1 and EP8", tpv)
		}
		for _, x := range []float64{1, 8, 64} {
			var data [2][]float64
			for i, p := range at {
				for _, o := range ts.Ops {
					if o.Key == p.Key() {
						for _, r := range o.Rows {
							if r.X[0] == x {
								data[i] = append(data[i], r.TimeMs)
							}
						}
					}
				}
				slices.Sort(data[i])
			}
			want := quantile(data[1], 0.5) / quantile(data[0], 0.5)
			got := at[1].PredictMs([]float64{x}) / at[0].PredictMs([]float64{x})
			t.Logf("TP%d shuffling of %g tokens, EP8/EP1: data %.2f, predicted %.2f", tpv, x, want, got)
			if math.Abs(got/want-1) > 0.25 {
				t.Errorf("TP%d shuffling of %g tokens: EP8/EP1 predicted %.2f, the data %.2f", tpv, x, got, want)
			}
		}
	}
}
