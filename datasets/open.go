package datasets

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// OpenRun returns the arrivals of a simulation, streamed, and how many
// requests they hold:
//
//   - a trace file (trace) replays its rows in order, with its recorded
//     arrival times (scaled to ratePerS when that is positive) or, for a
//     trace without times, Poisson arrivals at ratePerS;
//   - a workload (fixed:PxO, splitwise-conv, ..., trace:PATH; see
//     ParseWorkload) arrives as a Poisson process at ratePerS.
//
// With no rate and no recorded times every request arrives at time zero,
// like vLLM's benchmark with an infinite rate. n is the number of requests
// (0: every row of a trace).
func OpenRun(trace, workload string, ratePerS float64, n int, seed uint64) (RequestStream, int, error) {
	switch {
	case trace == "" && workload == "":
		return nil, 0, fmt.Errorf("simulate workload: no arrivals: give a trace file or a generated workload")
	case trace != "" && workload != "":
		return nil, 0, fmt.Errorf("simulate workload: give a trace file or a generated workload, not both")
	}
	name := workload
	if trace != "" {
		name = "trace:" + trace
	}
	wl, err := ParseWorkload(name)
	if err != nil {
		return nil, 0, err
	}
	a := Arrivals{Kind: ArrivalsPoisson, RateRPS: ratePerS}
	switch {
	case wl.Kind == KindTrace && wl.HasArrivals():
		a.Kind = ArrivalsReplay
	case ratePerS == 0:
		a.Kind = ArrivalsNone
	}
	src, err := NewSource(wl, a, n, seed)
	if err != nil {
		return nil, 0, fmt.Errorf("simulate workload: %w", err)
	}
	if a.Kind == ArrivalsNone {
		return atTimeZero{src}, src.Len(), nil
	}
	return src, src.Len(), nil
}

// RequestStream yields requests in arrival order; Err reports a failure
// that ended the stream early.
type RequestStream interface {
	Next() (spec.Request, bool)
	Err() error
}

// Err implements RequestStream: a Source never fails part way.
func (s *Source) Err() error { return nil }

// atTimeZero gives requests without arrival times (NaN) time zero: every
// request arrives at once.
type atTimeZero struct{ *Source }

func (z atTimeZero) Next() (spec.Request, bool) {
	r, ok := z.Source.Next()
	if math.IsNaN(r.ArrivalS) {
		r.ArrivalS = 0
	}
	return r, ok
}
