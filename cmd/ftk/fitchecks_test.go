package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fit refuses an -o that names a folder before fitting (it failed at the
// rename, after all the work), and warns when operators are fitted on one
// row each, which it did without a word.
func TestFitChecksOutputFirstAndWarnsOfOneRow(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile("../../testdata/profiles/frontier-h800/Qwen3-30B-A3B-tiny/linear_op_kernel_only.csv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfterN(string(data), "\n", 3)
	in := filepath.Join(dir, "h800")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(in, "linear_op.csv"), []byte(lines[0]+lines[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	ds := filepath.Join(dir, "ds")
	if _, errOut, code := ftk(t, "ingest", in, "--model", "qwen3-30b-a3b", "-o", ds); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}
	folder := filepath.Join(dir, "folder")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := ftk(t, "fit", ds, "-o", folder)
	if code != exitUsage || !strings.Contains(errOut, "is a folder") || strings.Contains(errOut, "warning") {
		t.Errorf("fit -o FOLDER: exit %d, stderr %q; want exit %d before fitting, naming the folder", code, errOut, exitUsage)
	}
	_, errOut, code = ftk(t, "fit", ds, "-o", filepath.Join(dir, "b.arrow"))
	if code != 0 || !strings.Contains(errOut, "warning: 6 of 6 operators fitted on fewer than 3 rows") {
		t.Errorf("one-row fit: exit %d, stderr %q; want exit 0 with a warning", code, errOut)
	}
}
