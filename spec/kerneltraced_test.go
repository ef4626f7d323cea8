package spec

import (
	"math"
	"strconv"
	"testing"
)

func TestKernelTraced(t *testing.T) {
	// float32 event readings as ftk collect writes them: the torch worker's
	// elapsed_time is a float32 widened to a float64, written exactly
	// (strconv 'g', -1).
	collected := func(ms float32) float64 {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(ms), 'g', -1, 64), 64)
		return v
	}
	tests := []struct {
		name      string
		samplesMs []float64
		want      bool
	}{
		// .min and .max of the row's first two operators
		{"H800 kernel-only file, Qwen3-30B-A3B-tiny linear_op_kernel_only.csv:2",
			[]float64{0.001824, 0.002944, 0.00256, 0.0027519999999999}, true},
		{"H800 CUDA_EVENT file, Qwen3-30B-A3B-tiny linear_op.csv:2",
			[]float64{0.0159360002726316, 0.0255040004849433, 0.0160959996283054, 0.0181440003216266}, false},
		{"A800 CUDA_EVENT file, TP2 row (kernel-traced), linear_op.csv:3",
			[]float64{0.0218879999999999, 0.022368, 0.004128, 0.004192}, true},
		{"A800 CUDA_EVENT file, TP1 eager row, linear_op.csv:2",
			[]float64{0.027615999802947, 0.177824005484581, 0.0083200000226497, 0.038816001266241}, false},
		{"A800 kernel-traced attention row, a reshape at exactly 0 (ignored)",
			[]float64{0, 0, 0.021888, 0.022368}, true},
		{"Vidur all_reduce.csv:2, whole microseconds", []float64{0.015, 0.038}, true},
		{"Vidur all_reduce.csv:1709, 0.125 ms is a float32 too: undecided", []float64{0.125, 0.125}, false},
		{"ftk collect CUDA_EVENT row", []float64{collected(0.027616), collected(0.0312)}, false},
		{"ftk collect CUDA_EVENT row on multiples of 1/64 ms", []float64{collected(0.015625), collected(0.03125)}, false},
		{"synthetic backend: roofline time times log-normal noise", []float64{0.0123 * math.Exp(0.03*0.71), 0.0123 * math.Exp(-0.03*1.3)}, false},
		{"one float32 sample among whole nanoseconds", []float64{0.021888, 0.027615999802947}, false},
		{"nothing timed", []float64{0, math.NaN()}, false},
	}
	for _, tt := range tests {
		if got := KernelTraced(tt.samplesMs); got != tt.want {
			t.Errorf("%s: KernelTraced(%v) = %v, want %v", tt.name, tt.samplesMs, got, tt.want)
		}
	}
}
