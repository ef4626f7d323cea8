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
			t.Fatalf("%s: err = %v", c.name, err)
		}
		got, rerr := os.ReadFile(path)
		if rerr != nil || string(got) != c.want {
			t.Fatalf("%s: file = %q, %v; want %q", c.name, got, rerr, c.want)
		}
		fi, _ := os.Stat(path)
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644", c.name, fi.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
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
