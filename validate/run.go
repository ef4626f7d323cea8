package validate

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Side tells which side of a comparison a run is on.
type Side int

// The two sides of a comparison.
const (
	Measured Side = iota
	Simulated
)

// String returns "measured" or "simulated".
func (s Side) String() string {
	if s == Simulated {
		return "simulated"
	}
	return "measured"
}

// RunID identifies a run within a comparison.
type RunID struct {
	Config   string
	Workload string
	// Repetition is 1-based; 0 means the run is not numbered and pairs with
	// every repetition on the other side.
	Repetition int
}

// String formats the identity as CONFIG/WORKLOAD/rN (or without /rN).
func (id RunID) String() string {
	if id.Repetition == 0 {
		return id.Config + "/" + id.Workload
	}
	return fmt.Sprintf("%s/%s/r%d", id.Config, id.Workload, id.Repetition)
}

// Request is one request of a run with its latency metrics. Metrics are NaN
// when undefined (TPOT of a one-token output) or when the request did not
// complete.
type Request struct {
	ID           int
	ArrivalS     float64 // seconds from the run start; NaN when not recorded
	PromptTokens int
	OutputTokens int
	TTFTMs       float64
	TPOTMs       float64
	E2EMs        float64
	Completed    bool
}

// Run is one replay of a trace with its per-request metrics.
type Run struct {
	ID     RunID
	Side   Side
	Source string // file or directory the run was read from
	// Model is the model name as the source labels it ("" when unknown).
	Model    string
	Requests []Request
	// MakespanS is the time from the first arrival to the last completion.
	MakespanS float64
	// Sim is the configuration of a run read from an ftk simulate output
	// (nil otherwise): what calibration runs again with new corrections.
	Sim *runresult.Config
}

// String names the run for messages: side, identity and source.
func (r *Run) String() string {
	return fmt.Sprintf("%s run %s (%s)", r.Side, r.ID, r.Source)
}

// Completed returns the number of completed requests.
func (r *Run) Completed() int {
	n := 0
	for _, q := range r.Requests {
		if q.Completed {
			n++
		}
	}
	return n
}

// PromptTokens returns the prompt tokens of all requests, completed or not.
func (r *Run) PromptTokens() int {
	n := 0
	for _, q := range r.Requests {
		n += q.PromptTokens
	}
	return n
}

// MeanOutputTokens is the mean output length of the completed requests
// (0 when none completed).
func (r *Run) MeanOutputTokens() float64 {
	n, sum := 0, 0
	for _, q := range r.Requests {
		if q.Completed {
			n++
			sum += q.OutputTokens
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum) / float64(n)
}

// Check reports the first reason the run cannot be compared: no requests,
// no completed request, a metric that is NaN, infinite or negative where it
// must be defined, or an unknown makespan.
func (r *Run) Check() error {
	if len(r.Requests) == 0 {
		return fmt.Errorf("%s: empty run (no requests)", r.Source)
	}
	if r.Completed() == 0 {
		return fmt.Errorf("%s: none of its %d requests completed", r.Source, len(r.Requests))
	}
	for i, q := range r.Requests {
		if !q.Completed {
			continue
		}
		bad := func(name string, v float64) error {
			return fmt.Errorf("%s: request %d (id %d): %s is %v", r.Source, i, q.ID, name, v)
		}
		if !finiteNonNeg(q.TTFTMs) {
			return bad("ttft_ms", q.TTFTMs)
		}
		if !finiteNonNeg(q.E2EMs) {
			return bad("e2e_ms", q.E2EMs)
		}
		if q.OutputTokens < 1 {
			return fmt.Errorf("%s: request %d (id %d): completed with %d output tokens", r.Source, i, q.ID, q.OutputTokens)
		}
		if q.OutputTokens >= 2 && !finiteNonNeg(q.TPOTMs) {
			return bad("tpot_ms", q.TPOTMs)
		}
	}
	if !(r.MakespanS > 0) || math.IsInf(r.MakespanS, 0) {
		return fmt.Errorf("%s: makespan %v s: need a positive duration (arrival times or the benchmark's duration)", r.Source, r.MakespanS)
	}
	return nil
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 0) }

// makespanS returns the time from the first arrival to the last completion
// of completed requests, from arrival times and E2E latencies; NaN when an
// arrival time is missing.
func makespanS(reqs []Request) float64 {
	first, last := math.Inf(1), math.Inf(-1)
	for _, q := range reqs {
		if math.IsNaN(q.ArrivalS) {
			return math.NaN()
		}
		first = min(first, q.ArrivalS)
		if q.Completed {
			last = max(last, q.ArrivalS+q.E2EMs/1e3)
		}
	}
	if math.IsInf(first, 0) || math.IsInf(last, 0) {
		return math.NaN()
	}
	return last - first
}

// tpotMs is spec's TPOT from TTFT, E2E and the output length.
func tpotMs(ttftMs, e2eMs float64, outputTokens int) float64 {
	return spec.RequestTimes{FirstTokenS: ttftMs / 1e3, FinishS: e2eMs / 1e3, OutputTokens: outputTokens}.TPOTMs()
}
