package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ingest follows a symbolic link to a folder of profiles (it skipped it,
// finding no CSV), reads a folder reached twice through a link loop once,
// and warns when the sweep's ftk-collect.yaml says status: incomplete (it
// ingested without a word).
func TestIngestFollowsLinksAndWarnsOfIncompleteSweeps(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../testdata/profiles/frontier-h800/Qwen3-30B-A3B-tiny/linear_op.csv")
	if err != nil {
		t.Fatal(err)
	}
	sweep := filepath.Join(dir, "elsewhere", "sweep")
	if err := os.MkdirAll(sweep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sweep, "linear_op.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sweep, "ftk-collect.yaml"), []byte("device: h800\nmodel: qwen3-30b-a3b\nstatus: incomplete\nfailed: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(sweep, filepath.Join(in, "h800")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(in, filepath.Join(sweep, "loop")); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := ftk(t, "ingest", in, "-o", filepath.Join(dir, "ds"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := strings.Count(errOut, "linear_op.csv: linear_op/frontier"); n != 1 {
		t.Errorf("the linked folder's CSV read %d times, want once:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, "status: incomplete (3 shapes failed") {
		t.Errorf("no warning of the incomplete sweep:\n%s", errOut)
	}
}
