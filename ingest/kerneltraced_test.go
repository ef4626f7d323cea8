package ingest

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// TestKernelTracedRows ingests real files one at a time and checks which
// CUDA_EVENT rows are reported as kernel time (spec.KernelTraced), by key.
// The counts are those of the files in testdata (docs/formats.md).
func TestKernelTracedRows(t *testing.T) {
	tests := []struct {
		file     string
		meas     string
		rows     int            // kernel-traced rows reported
		samples  map[string]int // some keys and their samples
		noneOfTP int            // a TP with no kernel-traced sample (0: none checked)
	}{
		// a CUDA_EVENT file: float32 samples on every row
		{file: "frontier-h800/Qwen3-30B-A3B-tiny/linear_op.csv", meas: spec.CUDAEvent},
		{file: "frontier-h800/llama2_7b_dense_example/attention.csv", meas: spec.CUDAEvent},
		// a kernel-only file: whole nanoseconds, but labelled as such, so
		// nothing to report
		{file: "frontier-h800/Qwen3-30B-A3B-tiny/linear_op_kernel_only.csv", meas: spec.KernelOnly},
		// the A800 file: eager rows at TP1 (TP8 for linear), traced at TP2 and TP4
		{file: "frontier-a800-qwen3-30b-a3b/linear_op.csv", meas: spec.CUDAEvent, rows: 518,
			samples:  map[string]int{"attn_pre_proj[CUDA_EVENT tp=2]": 259, "attn_rope[CUDA_EVENT tp=4]": 259},
			noneOfTP: 1},
		{file: "frontier-a800-qwen3-30b-a3b/attention.csv", meas: spec.CUDAEvent, rows: 2600,
			samples:  map[string]int{"attn_prefill[CUDA_EVENT tp=2]": 536, "attn_decode[CUDA_EVENT tp=8]": 632},
			noneOfTP: 1},
		// a legacy file defaulted to CUDA_EVENT, every row a kernel time
		// but line 1,709 (0.125 ms twice, which a float32 event could read)
		{file: "vidur-h100/network-h100_dgx/all_reduce.csv", meas: spec.CUDAEvent, rows: 2981,
			samples: map[string]int{"all_reduce[CUDA_EVENT tp=4 workers=4]": 994}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			m, err := Ingest([]string{filepath.Join(profilesDir(t), tt.file)}, t.TempDir(), Options{})
			if err != nil {
				t.Fatal(err)
			}
			in := m.Inputs[0]
			if in.Measurement != tt.meas || in.KernelTracedRows != tt.rows {
				t.Fatalf("%s, %d kernel-traced rows; want %s, %d", in.Measurement, in.KernelTracedRows, tt.meas, tt.rows)
			}
			got := map[string]int{}
			for _, k := range in.KernelTraced {
				got[k.Key] = k.Samples
				if tt.noneOfTP > 0 && strings.Contains(k.Key, fmt.Sprintf(" tp=%d", tt.noneOfTP)) {
					t.Errorf("%s reported kernel-traced: that TP holds eager event rows", k.Key)
				}
			}
			for k, n := range tt.samples {
				if got[k] != n {
					t.Errorf("%s: %d kernel-traced samples, want %d", k, got[k], n)
				}
			}
			var note bool
			for _, n := range in.Notes {
				note = note || strings.Contains(n, "_kernel_only.csv")
			}
			if note != (tt.rows > 0) {
				t.Errorf("notes %q: want a note saying what to do exactly when rows are kernel-traced", in.Notes)
			}
			var b strings.Builder
			dataset.WriteSummary(&b, "d", &dataset.Dataset{Manifest: *m})
			if warn := strings.Contains(b.String(), "warning:"); warn != (tt.rows > 0) {
				t.Errorf("summary warning %v, want %v:\n%s", warn, tt.rows > 0, b.String())
			}
		})
	}
}
