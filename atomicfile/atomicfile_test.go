package atomicfile

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	cases := []struct {
		name    string
		fill    func(w *bufio.Writer) error
		wantErr bool
		want    string // content after the call ("" and no file when failing first)
	}{
		{"writes", func(w *bufio.Writer) error { _, err := w.WriteString("one\n"); return err }, false, "one\n"},
		{"failure keeps the old file", func(w *bufio.Writer) error { w.WriteString("half"); return errors.New("boom") }, true, "one\n"},
		{"replaces", func(w *bufio.Writer) error { _, err := w.WriteString("two\n"); return err }, false, "two\n"},
	}
	for _, c := range cases {
		err := Write(path, c.fill)
		if (err != nil) != c.wantErr {
			t.Fatalf("INV-10: %s: err = %v", c.name, err)
		}
		got, rerr := os.ReadFile(path)
		if rerr != nil || string(got) != c.want {
			t.Fatalf("INV-10: %s: file = %q, %v; want %q", c.name, got, rerr, c.want)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("INV-10: %s: mode %v, want 0644", c.name, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("INV-10: temporary files left: %v", entries)
	}
}

func TestAbortAndIsTemp(t *testing.T) {
	dir := t.TempDir()
	a, err := Create(filepath.Join(dir, "x.arrow"))
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || !IsTemp(entries[0].Name()) {
		t.Fatalf("temporary file %v not recognised by IsTemp", entries)
	}
	if IsTemp("x.arrow") || IsTemp("manifest.json") {
		t.Fatal("IsTemp accepts a final name")
	}
	a.Abort()
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("Abort left %v", entries)
	}
}

// RemoveTemps removes this package's temporary files of one output (beside
// it, and inside it when it is a folder, however deep) and nothing else.
func TestRemoveTemps(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	keep := []string{
		"out/requests.csv", "out/.hidden", "out/.x.tmp-", "out/.x.tmp-12a", "out/x.tmp-123",
		".other.tmp-123", ".outer.tmp-5", "out2/.a.tmp-9", ".out.ftk-lock",
	}
	remove := []string{"out/.requests.csv.tmp-123", "out/h100/m/.attention.csv.tmp-4567", ".out.tmp-42"}
	for _, p := range append(append([]string{}, keep...), remove...) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RemoveTemps(out)
	if err != nil || n != len(remove) {
		t.Fatalf("RemoveTemps = %d, %v; want %d", n, err, len(remove))
	}
	for _, p := range keep {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
	for _, p := range remove {
		if _, err := os.Stat(filepath.Join(root, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there", p)
		}
	}
	// A file output: only the temporary files named for it, beside it.
	if err := os.WriteFile(filepath.Join(root, ".b.arrow.tmp-77"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := RemoveTemps(filepath.Join(root, "b.arrow")); err != nil || n != 1 {
		t.Errorf("file output: RemoveTemps = %d, %v; want 1", n, err)
	}
	if n, err := RemoveTemps(filepath.Join(root, "missing")); err != nil || n != 0 {
		t.Errorf("missing output: RemoveTemps = %d, %v; want 0, nil", n, err)
	}
	// A real temporary file of Create is recognised.
	a, err := Create(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Abort()
	if n, err := RemoveTemps(out); err != nil || n != 1 {
		t.Errorf("Create's temporary file: RemoveTemps = %d, %v; want 1", n, err)
	}
}
