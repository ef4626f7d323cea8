package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/outlock"
)

// TestSecondWriterFails: while another run holds an output, every command
// that would write it fails at once (exit 1) naming the holder's pid and
// command, and writes nothing; once released, the same command runs.
func TestSecondWriterFails(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join("..", "..", "testdata")
	ds := filepath.Join(dir, "ds")
	if _, errOut, code := ftk(t, "ingest", filepath.Join(shared, "profiles", "frontier-h800", "Qwen3-30B-A3B-tiny"), "-o", ds); code != 0 {
		t.Fatal(errOut)
	}
	for _, tc := range []struct {
		name   string
		output string // what the holder locks
		args   []string
	}{
		{"collect", filepath.Join(dir, "prof", "h100", "qwen3-30b-a3b-tiny"),
			[]string{"collect", "linear", "--backend", "synthetic", "--model", "qwen3-30b-a3b-tiny", "--device", "h100", "-o", filepath.Join(dir, "prof")}},
		{"ingest", filepath.Join(dir, "ds2"), []string{"ingest", filepath.Join(shared, "profiles", "vidur-h100"), "-o", filepath.Join(dir, "ds2")}},
		{"fit", filepath.Join(dir, "b.arrow"), []string{"fit", ds, "-o", filepath.Join(dir, "b.arrow"), "--trees", "2", "--measurement", "KERNEL_ONLY"}},
		{"simulate", filepath.Join(dir, "sim"), []string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:64x8", "--num-requests", "5", "-o", filepath.Join(dir, "sim")}},
		{"datasets make", filepath.Join(dir, "t.csv"), []string{"datasets", "make", "fixed:64x8", "-n", "5", "-o", filepath.Join(dir, "t.csv")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held, err := outlock.Take(tc.output, "ftk "+tc.name+" (the first run)")
			if err != nil {
				t.Fatal(err)
			}
			_, errOut, code := ftk(t, tc.args...)
			want := "is being written by pid " + strconv.Itoa(os.Getpid()) + " (ftk " + tc.name + " (the first run)), since "
			if code != exitRuntime || !strings.Contains(errOut, want) {
				t.Errorf("while held: exit %d, stderr %q, want %q", code, errOut, want)
			}
			if ents, _ := os.ReadDir(tc.output); len(ents) > 0 {
				t.Errorf("while held, %s got %d entries", tc.output, len(ents))
			}
			if st, err := os.Stat(tc.output); err == nil && !st.IsDir() {
				t.Errorf("while held, %s was written", tc.output)
			}
			held.Release()
			if _, errOut, code := ftk(t, tc.args...); code != 0 {
				t.Errorf("after release: exit %d: %s", code, errOut)
			}
		})
	}
}
