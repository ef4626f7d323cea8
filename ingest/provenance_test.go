package ingest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProfilingBackend: each input's profiling backend comes from its
// profiling_backend cells, else its ftk-collect.yaml, else it is a GPU
// profiler's file; a file mixing backends or naming an unknown one is
// refused.
func TestProfilingBackend(t *testing.T) {
	base := readTable(t, filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "linear_op.csv"))
	withCol := func(vals ...string) []byte {
		tb := base.clone()
		tb.header = append(tb.header, "profiling_backend")
		for i := range tb.rows {
			tb.rows[i] = append(tb.rows[i], vals[i%len(vals)])
		}
		return tb.bytes()
	}
	for _, tc := range []struct {
		name, yaml    string
		data          []byte
		backend, from string // want; from is a substring
		fatal         string
	}{
		{name: "Frontier file", data: base.bytes(), backend: "gpu", from: "a GPU profiler's file"},
		{name: "synthetic rows", data: withCol("synthetic"), backend: "synthetic", from: "profiling_backend column"},
		{name: "torch rows on a GPU", data: withCol("torch"), backend: "gpu", from: "profiling_backend column"},
		{name: "collect YAML", data: base.bytes(), yaml: "device: h100\nbackend: synthetic\n", backend: "synthetic", from: "ftk-collect.yaml"},
		{name: "mixed rows", data: withCol("synthetic", "torch"), fatal: "rows of several profiling backends (synthetic, torch) in one file"},
		{name: "unknown backend", data: withCol("simulator"), fatal: `unknown profiling backend "simulator"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "h100", "qwen3-30b-a3b")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "linear_op.csv"), tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.yaml != "" {
				if err := os.WriteFile(filepath.Join(dir, CollectFile), []byte(tc.yaml), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			m, err := Ingest([]string{dir}, filepath.Join(t.TempDir(), "ds"), Options{})
			if tc.fatal != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fatal) {
					t.Fatalf("error %v, want %q", err, tc.fatal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			in := m.Inputs[0]
			if in.Backend != tc.backend || !strings.Contains(in.BackendFrom, tc.from) || !slices.Equal(m.Backends, []string{tc.backend}) {
				t.Errorf("input backend %q from %q, dataset %v; want %q from %q", in.Backend, in.BackendFrom, m.Backends, tc.backend, tc.from)
			}
		})
	}
}
