package ingest

import (
	"os"
	"path/filepath"
	"testing"
)

// profilesDir is testdata/profiles seen from this package; tests fail
// (never skip) without it.
func profilesDir(tb testing.TB) string {
	tb.Helper()
	dir := filepath.Join("..", "testdata", "profiles")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		tb.Fatalf("shared profiles missing at %s (CI needs testdata beside the repo): %v", dir, err)
	}
	return dir
}
