package roofline

import (
	"math"
	"path/filepath"
	"testing"
)

// wholeMicroseconds reports whether every timed sample of row r (the .min
// and .max of each operator; blank and zero ones ignored) is a whole number
// of microseconds. Kineto, the PyTorch profiler's tracer, wrote a GPU
// kernel's duration as whole microseconds, truncated, until March 2024
// (libkineto ITraceActivity::nsToUs: "ns / 1000 ... No rounding!", used by
// GpuActivity::duration(); pytorch/kineto commit dfd563dd, 2024-03-18,
// moved traces to nanoseconds), and Vidur's profiler sums the traced
// kernels of each timed scope from that trace (profiling/utils/
// record_function_tracer.py). A kernel of 1.9 us then reads 1 us, and the
// median of such readings is the floor of the kernel time (traceReadingMs).
// On testdata the rule holds for Vidur's three files on every row (31,320
// mlp.csv samples, medians of even counts half-way between) and for no
// Frontier file (whole nanoseconds, or float32 event times).
func wholeMicroseconds(r realRow, ops []string) bool {
	n := 0
	for _, o := range ops {
		for _, k := range []string{".min", ".max"} {
			v := r.num("time_stats." + o + k)
			if math.IsNaN(v) || v <= 0 {
				continue
			}
			us := v * 1e3
			if math.Abs(us-math.Round(us)) > 1e-6 {
				return false
			}
			n++
		}
	}
	return n > 0
}

// traceReadingMs is what a profile row of p reads for a kernel time of ms:
// its floor in whole microseconds when the row was traced at that
// resolution (wholeMicroseconds; every such op on testdata is one kernel).
func traceReadingMs(p realPoint, ms float64) float64 {
	if !p.wholeUs {
		return ms
	}
	return math.Floor(ms*1e3+1e-9) / 1e3
}

// TestWholeMicrosecondRows: the rule that tells a truncating trace holds for
// every row of Vidur's three files and for no Frontier row.
func TestWholeMicrosecondRows(t *testing.T) {
	whole, rows := map[string]int{}, map[string]int{}
	seen := map[string]map[int]bool{}
	for _, p := range loadRealPoints(t) {
		if seen[p.file] == nil {
			seen[p.file] = map[int]bool{}
		}
		if seen[p.file][p.line] {
			continue
		}
		seen[p.file][p.line] = true
		top := filepath.Dir(filepath.Dir(p.file))
		rows[top]++
		if p.wholeUs {
			whole[top]++
		}
	}
	for _, tc := range []struct {
		top   string
		whole bool
	}{
		{"vidur-h100", true},
		{"frontier-h800", false},
		{".", false}, // frontier-a800-qwen3-30b-a3b/*.csv
	} {
		want := 0
		if tc.whole {
			want = rows[tc.top]
		}
		if rows[tc.top] == 0 || whole[tc.top] != want {
			t.Errorf("%s: %d of %d rows read as whole microseconds, want %d", tc.top, whole[tc.top], rows[tc.top], want)
		}
	}
}

// TestTraceReadingFloorsKernelTime: a 1.9 us kernel reads 1 us from a
// whole-microsecond trace, as Vidur's residual add of one token does, and
// is read as it is from any other row.
func TestTraceReadingFloorsKernelTime(t *testing.T) {
	for _, tc := range []struct {
		wholeUs  bool
		ms, want float64
	}{
		{true, 0.0019, 0.001},
		{true, 0.031999, 0.031},
		{true, 0.004, 0.004},
		{false, 0.0019, 0.0019},
	} {
		if got := traceReadingMs(realPoint{wholeUs: tc.wholeUs}, tc.ms); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("wholeUs %v, %.6f ms: read %.6f ms, want %.6f", tc.wholeUs, tc.ms, got, tc.want)
		}
	}
}
