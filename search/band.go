package search

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/publicrun"
)

// Band is how far the simulator was off on the published vLLM runs of a
// deployment's configuration class (docs/validation.md, through
// publicrun.Errors): the largest |error| of ftk on the held-out runs of
// that model family (dense or MoE), device and execution mode, over the
// metrics the search's answer rests on (those of the SLO targets, and
// the output throughput). Where no held-out run is of the class, the
// class is widened: any device, then any execution mode, then every run;
// Class says which runs it is.
type Band struct {
	Pct   float64 // 0 with no run at all
	Runs  int
	Class string
}

// bandMetrics are the measured metrics (publicrun.Metrics) behind an SLO
// target's metric: a search's rate rests on them and on the throughput.
var bandMetrics = map[string][]string{
	"ttft": {"ttft_mean_ms"},
	"tpot": {"tpot_mean_ms", "itl_p50_ms"},
	"e2e":  {"e2e_mean_ms"},
}

// bands computes the error band of each configuration class a search's
// candidates belong to.
type bands struct {
	errs    []publicrun.MeasuredError
	metrics map[string]bool
	moe     bool
}

func newBands(s *Settings) (*bands, error) {
	errs, err := publicrun.Errors()
	if err != nil {
		return nil, err
	}
	b := &bands{errs: errs, metrics: map[string]bool{"output_tok_s": true}, moe: s.Space.Model.IsMoE()}
	for _, t := range s.SLO {
		for _, m := range bandMetrics[t.Metric] {
			b.metrics[m] = true
		}
	}
	return b, nil
}

// of is the band of candidate c's class.
func (b *bands) of(c Candidate) Band {
	family := "dense"
	if b.moe {
		family = "MoE"
	}
	levels := []struct {
		class string
		match func(e publicrun.MeasuredError) bool
	}{
		{fmt.Sprintf("%s, %s, %s", family, c.Device, c.ExecutionMode), func(e publicrun.MeasuredError) bool {
			return e.MoE == b.moe && e.Device == c.Device && e.ExecutionMode == c.ExecutionMode
		}},
		{fmt.Sprintf("%s, any device, %s", family, c.ExecutionMode), func(e publicrun.MeasuredError) bool {
			return e.MoE == b.moe && e.ExecutionMode == c.ExecutionMode
		}},
		{family + ", any device and mode", func(e publicrun.MeasuredError) bool { return e.MoE == b.moe }},
		{"every run", func(publicrun.MeasuredError) bool { return true }},
	}
	for _, l := range levels {
		var band Band
		runs := map[string]bool{}
		for _, e := range b.errs {
			if e.Role == publicrun.RoleHeldOut && b.metrics[e.Metric] && l.match(e) {
				band.Pct = max(band.Pct, math.Abs(e.ErrorPct))
				runs[e.Run] = true
			}
		}
		if len(runs) > 0 {
			band.Runs, band.Class = len(runs), l.class
			return band
		}
	}
	return Band{Class: "no published run"}
}

// String is the band as the table shows it: ±5.6%.
func (b Band) String() string {
	if b.Runs == 0 {
		return "-"
	}
	return fmt.Sprintf("±%.1f%%", b.Pct)
}

// Describe is the band with the runs it comes from: ±5.6% for MoE, h100,
// cuda-graph (1 held-out run).
func (b Band) Describe() string {
	if b.Runs == 0 {
		return "- for no published run"
	}
	runs := "runs"
	if b.Runs == 1 {
		runs = "run"
	}
	return fmt.Sprintf("%s for %s (%d held-out %s)", b, b.Class, b.Runs, runs)
}
