package ingest

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/dataset"
)

// TestOverlappingPaths: a folder and one inside it, in either order, or one
// folder twice, read every file once and give the dataset of the folder
// alone.
func TestOverlappingPaths(t *testing.T) {
	a := filepath.Join(profilesDir(t), "frontier-h800")
	sub := filepath.Join(a, "Qwen3-30B-A3B-tiny")
	ref, err := Ingest([]string{a}, filepath.Join(t.TempDir(), "ref"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		paths []string
	}{
		{"folder then subfolder", []string{a, sub}},
		{"subfolder then folder", []string{sub, a}},
		{"folder twice", []string{a, a}},
		{"folder and a file in it", []string{a, filepath.Join(sub, "moe.csv")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Ingest(tc.paths, filepath.Join(t.TempDir(), "ds"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Inputs) != len(ref.Inputs) || m.Samples != ref.Samples {
				t.Errorf("%d inputs, %d samples; the folder alone gives %d, %d", len(m.Inputs), m.Samples, len(ref.Inputs), ref.Samples)
			}
			if m.Checksum() != ref.Checksum() && !strings.Contains(tc.name, "subfolder then") {
				t.Errorf("checksum %s differs from the folder alone's %s", m.Checksum(), ref.Checksum())
			}
		})
	}
	empty := t.TempDir()
	if _, err := Ingest([]string{a, empty}, filepath.Join(t.TempDir(), "x"), Options{}); err == nil || !strings.Contains(err.Error(), "no CSV files under "+empty) {
		t.Errorf("a folder without CSV files: %v", err)
	}
}

// TestIdenticalFilesSkipped: a copied CSV in the input folder is read once,
// listed in the manifest and counted in the report.
func TestIdenticalFilesSkipped(t *testing.T) {
	src := filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "linear_op.csv")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "h800", "qwen3-30b-a3b")
	os.MkdirAll(dir, 0o755)
	for _, name := range []string{"linear_op.csv", "linear_op copy.csv"} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	one, err := Ingest([]string{src}, filepath.Join(t.TempDir(), "one"), Options{Device: "h800", Model: "qwen3-30b-a3b"})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "two")
	m, err := Ingest([]string{dir}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Samples != one.Samples || len(m.Inputs) != 1 {
		t.Errorf("%d samples from %d inputs, want %d from 1", m.Samples, len(m.Inputs), one.Samples)
	}
	if len(m.IdenticalFiles) != 1 || m.IdenticalFiles[0].Path != filepath.Join(dir, "linear_op.csv") || m.IdenticalFiles[0].SameAs != filepath.Join(dir, "linear_op copy.csv") {
		t.Errorf("identical files %+v", m.IdenticalFiles)
	}
	if _, err := dataset.Load(out); err != nil {
		t.Fatal(err)
	}
	var rep bytes.Buffer
	WriteReport(&rep, out, m)
	if want := "dropped 0 exact duplicate rows and 1 identical file"; !strings.Contains(rep.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, rep.String())
	}
}
