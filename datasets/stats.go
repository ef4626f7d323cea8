package datasets

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/spec"
)

// LengthStats summarises a token length: mean, min, max and percentiles by
// spec.Percentile's rule.
type LengthStats struct {
	Mean, Min, P50, P90, P99, Max float64
}

// Stats summarises a trace.
type Stats struct {
	Count          int
	Prompt, Output LengthStats
	// HasArrivals is false for a length-only trace; the fields below are
	// then NaN.
	HasArrivals bool
	// DurationS is the last arrival minus the first.
	DurationS float64
	// RateRPS is the mean arrival rate, (Count-1)/DurationS: for a process
	// of rate r starting at 0 s it estimates r.
	RateRPS float64
	// InterArrivalCV is the coefficient of variation of the gaps between
	// consecutive arrivals (population standard deviation / mean): 1 for
	// Poisson, above 1 for bursty traffic.
	InterArrivalCV float64
}

// ComputeStats summarises requests.
func ComputeStats(reqs []spec.Request) Stats {
	st := Stats{Count: len(reqs), DurationS: math.NaN(), RateRPS: math.NaN(), InterArrivalCV: math.NaN()}
	prompt := make([]float64, len(reqs))
	output := make([]float64, len(reqs))
	for i, r := range reqs {
		prompt[i] = float64(r.PromptTokens)
		output[i] = float64(r.OutputTokens)
	}
	st.Prompt, st.Output = lengthStats(prompt), lengthStats(output)
	st.HasArrivals = HasArrivals(reqs)
	if !st.HasArrivals || len(reqs) < 2 {
		return st
	}
	st.DurationS = reqs[len(reqs)-1].ArrivalS - reqs[0].ArrivalS
	if st.DurationS > 0 {
		st.RateRPS = float64(len(reqs)-1) / st.DurationS
	}
	var sum, sumSq float64
	for i := 1; i < len(reqs); i++ {
		g := reqs[i].ArrivalS - reqs[i-1].ArrivalS
		sum += g
		sumSq += g * g
	}
	n := float64(len(reqs) - 1)
	mean := sum / n
	if mean > 0 {
		st.InterArrivalCV = math.Sqrt(math.Max(0, sumSq/n-mean*mean)) / mean
	}
	return st
}

func lengthStats(v []float64) LengthStats {
	if len(v) == 0 {
		nan := math.NaN()
		return LengthStats{nan, nan, nan, nan, nan, nan}
	}
	sort.Float64s(v)
	sum := 0.0
	for _, x := range v {
		sum += x
	}
	return LengthStats{
		Mean: sum / float64(len(v)),
		Min:  v[0],
		P50:  spec.PercentileSorted(v, 50),
		P90:  spec.PercentileSorted(v, 90),
		P99:  spec.PercentileSorted(v, 99),
		Max:  v[len(v)-1],
	}
}

// WriteText prints the stats: count, arrivals, then a table of lengths.
func (s Stats) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "requests: %d\n", s.Count)
	if s.HasArrivals {
		fmt.Fprintf(w, "arrivals: %.4g req/s over %.6g s, inter-arrival CV %.3f\n", s.RateRPS, s.DurationS, s.InterArrivalCV)
	} else {
		fmt.Fprintln(w, "arrivals: none recorded (length-only trace)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tokens\tmean\tmin\tp50\tp90\tp99\tmax\t")
	for _, l := range []struct {
		name string
		s    LengthStats
	}{{"prompt", s.Prompt}, {"output", s.Output}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.0f\t%.1f\t%.1f\t%.1f\t%.0f\t\n", l.name, l.s.Mean, l.s.Min, l.s.P50, l.s.P90, l.s.P99, l.s.Max)
	}
	return tw.Flush()
}
