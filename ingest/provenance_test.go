package ingest

import (
	"github.com/ftk-dev/ftk/dataset"
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

// TestKernelSource: a row's kernel_source cell reaches every sample of
// it: one name for all its operators, or op=name pairs, one per operator
// (an operator the pairs leave out has none); the manifest lists the
// sources, and a file without the column records none.
func TestKernelSource(t *testing.T) {
	base := readTable(t, filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "linear_op.csv"))
	cells := []string{"vllm._C.rms_norm", "attn_pre_proj=torch.nn.functional.linear;input_layernorm=torch:rms_norm"}
	tb := base.clone()
	tb.header = append(tb.header, "kernel_source")
	for i := range tb.rows {
		tb.rows[i] = append(tb.rows[i], cells[i%2])
	}
	dir := filepath.Join(t.TempDir(), "h100", "qwen3-30b-a3b")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "linear_op.csv"), tb.bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ds")
	m, err := Ingest([]string{dir}, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"torch.nn.functional.linear", "torch:rms_norm", "vllm._C.rms_norm"}
	if !slices.Equal(m.KernelSources, want) || !slices.Equal(m.Inputs[0].KernelSources, want) {
		t.Errorf("manifest kernel sources %v, input %v; want %v", m.KernelSources, m.Inputs[0].KernelSources, want)
	}
	ds, err := dataset.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range ds.Samples {
		// Data lines start at line 2: even rows (0-based) are lines 2, 4, ...
		var want string
		if (s.Line-2)%2 == 0 {
			want = "vllm._C.rms_norm"
		} else {
			want = map[string]string{"attn_pre_proj": "torch.nn.functional.linear", "input_layernorm": "torch:rms_norm"}[s.Key.Op]
		}
		if s.KernelSource != want {
			t.Fatalf("line %d %s: kernel source %q, want %q", s.Line, s.Key.Op, s.KernelSource, want)
		}
		seen[s.KernelSource] = true
	}
	if !seen[""] || !seen["torch:rms_norm"] {
		t.Errorf("kernel sources seen %v: want an operator without one on the pair rows", seen)
	}
	m, err = Ingest([]string{filepath.Join(profilesDir(t), "frontier-h800", "Qwen3-30B-A3B-tiny", "linear_op.csv")}, filepath.Join(t.TempDir(), "ds"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.KernelSources) != 0 {
		t.Errorf("a Frontier file records kernel sources %v", m.KernelSources)
	}
}
