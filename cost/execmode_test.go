package cost

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestCaptureSizes(t *testing.T) {
	for _, tc := range []struct{ max, n, want int }{
		{512, 1, 1}, {512, 2, 2}, {512, 3, 4}, {512, 4, 4}, {512, 5, 8}, {512, 9, 16}, {512, 512, 512}, {512, 513, 0},
		{64, 60, 64}, {60, 57, 0}, {60, 56, 56}, {3, 3, 0}, {3, 2, 2}, {6, 5, 0}, {6, 4, 4},
	} {
		if got := (captureSizes{max: tc.max}).pad(tc.n); got != tc.want {
			t.Errorf("max %d: batch %d pads to %d, want %d", tc.max, tc.n, got, tc.want)
		}
	}
}

// CUDA_EVENT op times include eager launch gaps: a run with them is eager
// by default and refuses a CUDA graph mode.
func TestExecutionModeFollowsMeasurement(t *testing.T) {
	for _, tc := range []struct {
		asked, measurement, want string
		fails                    bool
	}{
		{"", spec.KernelOnly, ExecCUDAGraph, false},
		{"", spec.CUDAEvent, ExecEager, false},
		{ExecEager, spec.CUDAEvent, ExecEager, false},
		{ExecCUDAGraph, spec.CUDAEvent, "", true},
		{ExecPiecewise, spec.CUDAEvent, "", true},
		{ExecPiecewise, spec.KernelOnly, ExecPiecewise, false},
	} {
		got, err := resolveExecutionMode(tc.asked, tc.measurement)
		if got != tc.want || (err != nil) != tc.fails {
			t.Errorf("%q with %s: %q, %v", tc.asked, tc.measurement, got, err)
		}
	}
}
