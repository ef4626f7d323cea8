package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withColumn copies a profile CSV into dir with one more column, name,
// holding value on every row.
func withColumn(t *testing.T, src, dir, name, value string) string {
	t.Helper()
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	rows[0] = append(rows[0], name)
	for i := 1; i < len(rows); i++ {
		rows[i] = append(rows[i], value)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, filepath.Base(src))
	g, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	w := csv.NewWriter(g)
	if err := w.WriteAll(rows); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// --device and --model name what the rows were measured on: rows whose
// own device or model_name column says otherwise are refused naming the
// file, row and column, not relabelled (they were, silently); rows that
// agree ingest. An escape sequence read from a CSV header is printed
// escaped, not sent to the terminal.
func TestIngestRefusesRelabelledRows(t *testing.T) {
	src := "../../testdata/profiles/frontier-h800/Qwen3-30B-A3B-tiny/linear_op.csv"
	dir := t.TempDir()
	for _, tc := range []struct {
		col, value, want string
		code             int
	}{
		{"device", "a100", "the row's device is a100, but --device says h800", exitRuntime},
		{"model_name", "llama-3.1-8b", "the row's model_name is llama-3.1-8b, but --model says qwen3-30b-a3b", exitRuntime},
		{"device", "H800", "", exitOK},
		{"model_name", "Qwen/Qwen3-30B-A3B", "", exitOK},
	} {
		in := filepath.Join(dir, tc.col+"-"+strings.ReplaceAll(tc.value, "/", "_"))
		p := withColumn(t, src, in, tc.col, tc.value)
		_, errOut, code := ftk(t, "ingest", in, "--device", "h800", "--model", "qwen3-30b-a3b", "-o", in+".out")
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s=%s: exit %d, stderr %q; want exit %d saying %q", tc.col, tc.value, code, errOut, tc.code, tc.want)
		}
		if tc.code != 0 && !strings.Contains(errOut, p+":2:") {
			t.Errorf("%s=%s: %q does not name the file and row", tc.col, tc.value, errOut)
		}
	}

	esc := filepath.Join(dir, "h100")
	if err := os.MkdirAll(esc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(esc, "linear_op.csv"), []byte("foo,time_stats.\x1b]0;owned\x07\x1b[31mred.min\n1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := ftk(t, "ingest", esc, "--model", "qwen3-30b-a3b", "-o", esc+".out")
	if code == 0 || strings.ContainsAny(errOut, "\x1b\x07") || !strings.Contains(errOut, `\x1b[31mred`) {
		t.Errorf("exit %d, stderr %q: want the header's escape sequence written as \\x1b", code, errOut)
	}
}
