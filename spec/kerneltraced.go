package spec

import "math"

// KernelTraced reports whether the timed samples of one profile row (the
// .min and .max of every operator the row times, in ms; blank, zero and
// negative ones are ignored) read as kernel time from a trace rather than
// as a CUDA event pair, whatever the row's measurement_type says.
//
// cudaEventElapsedTime returns a float (CUDA Runtime API), so each sample of
// an event pair is a float32 in milliseconds (0.027615999802947 is
// float32(0.027616)), and ftk collect writes it as that float32's exact
// decimal; a kernel trace (Kineto, the profilers' record_function method)
// gives durations in whole nanoseconds or microseconds, which profilers
// write as decimal milliseconds (0.021888, Vidur's 0.015). A row is
// kernel-traced when every sample is a whole number of nanoseconds and at
// least one is not a float32 value. A float32 is a whole number of
// nanoseconds only on multiples of 1/64 ms (15.625 us), where it is exact,
// so no row of event samples, however few and whatever they read, is taken
// for kernel time; nor is the synthetic backend's log-normal noise.
//
// On the files in testdata every *_kernel_only.csv file and Vidur's
// legacy files (mlp.csv, all_reduce.csv, send_recv.csv) are kernel-traced
// on every row (but all_reduce.csv line 1,709, 0.125 ms twice: a float32
// too, so undecided and not reported), every Frontier H800 CUDA_EVENT file on none, and the A800
// CUDA_EVENT file on 2,600 of 3,587 attention rows and 518 of 1,036
// linear rows (TP2 and TP4).
func KernelTraced(samplesMs []float64) bool {
	n := 0
	for _, v := range samplesMs {
		if math.IsNaN(v) || v <= 0 {
			continue
		}
		if !WholeNanoseconds(v) {
			return false
		}
		if float64(float32(v)) != v {
			n++
		}
	}
	return n > 0
}

// WholeNanoseconds reports whether ms is a whole number of nanoseconds (to
// 1e-6 ns: the decimal written by a profiler, read back as a float64).
func WholeNanoseconds(ms float64) bool {
	ns := ms * 1e6
	return math.Abs(ns-math.Round(ns)) <= 1e-6
}
