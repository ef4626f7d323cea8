package spec

import (
	"math"
	"sort"
)

// Request latency metrics, defined once for the whole toolkit as vLLM's
// serving benchmark (benchmarks/benchmark_serving.py) defines them:
//
//	TTFT  time to first token: arrival to the first output token.
//	TPOT  time per output token after the first:
//	      (E2E - TTFT) / (output tokens - 1); undefined (NaN) for one token.
//	ITL   inter-token latency: each gap between consecutive output tokens.
//	E2E   end-to-end latency: arrival to the last output token.
//
// Throughput is completed requests (or output tokens) per second over the
// makespan, from the first arrival to the last completion. Percentiles use
// linear interpolation between closest ranks (numpy's default, which the
// vLLM benchmark uses): rank = p/100 x (n-1).

// RequestTimes are the timestamps of one finished request, in seconds.
type RequestTimes struct {
	ArrivalS     float64
	FirstTokenS  float64
	FinishS      float64
	OutputTokens int
}

// TTFTMs is the time to first token in milliseconds.
func (r RequestTimes) TTFTMs() float64 { return (r.FirstTokenS - r.ArrivalS) * 1e3 }

// E2EMs is the end-to-end latency in milliseconds.
func (r RequestTimes) E2EMs() float64 { return (r.FinishS - r.ArrivalS) * 1e3 }

// TPOTMs is the mean time per output token after the first, in
// milliseconds; NaN when the request produced fewer than two tokens.
func (r RequestTimes) TPOTMs() float64 {
	if r.OutputTokens < 2 {
		return math.NaN()
	}
	return (r.E2EMs() - r.TTFTMs()) / float64(r.OutputTokens-1)
}

// Percentile returns the p-th percentile (0..100) of values by linear
// interpolation between closest ranks. NaNs are ignored; it returns NaN when
// no value remains. values is not modified.
func Percentile(values []float64, p float64) float64 {
	v := make([]float64, 0, len(values))
	for _, x := range values {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	sort.Float64s(v)
	return PercentileSorted(v, p)
}

// PercentileSorted is Percentile for values already sorted ascending and
// free of NaN.
func PercentileSorted(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	rank := p / 100 * float64(len(v)-1)
	lo := int(math.Floor(rank))
	hi := min(lo+1, len(v)-1)
	frac := rank - float64(lo)
	return v[lo] + frac*(v[hi]-v[lo])
}
