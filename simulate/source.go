package simulate

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/spec"
)

// Source yields the arrivals of a run in time order, one at a time, so that
// a trace of any length runs in bounded memory. *datasets.Source is one. A
// Source that can fail part way also has an Err() error method, which Run
// checks when Next reports the end.
type Source interface {
	// Next returns the next request, or false after the last.
	Next() (spec.Request, bool)
}

// SliceSource replays requests held in memory.
type SliceSource struct {
	reqs []spec.Request
	next int
}

// NewSliceSource returns a Source over reqs (not copied).
func NewSliceSource(reqs []spec.Request) *SliceSource { return &SliceSource{reqs: reqs} }

// Next implements Source.
func (s *SliceSource) Next() (spec.Request, bool) {
	if s.next >= len(s.reqs) {
		return spec.Request{}, false
	}
	s.next++
	return s.reqs[s.next-1], true
}

// atTimeZero gives requests without arrival times (NaN) time zero: every
// request arrives at once, like vLLM's benchmark with an infinite rate.
type atTimeZero struct{ src Source }

func (z atTimeZero) Next() (spec.Request, bool) {
	r, ok := z.src.Next()
	if math.IsNaN(r.ArrivalS) {
		r.ArrivalS = 0
	}
	return r, ok
}

// OpenSource returns the arrivals w names, streamed by package datasets,
// and how many requests they hold:
//
//   - a trace file replays its rows in order, with its recorded arrival
//     times (scaled to RatePerS when that is positive) or, for a trace
//     without times, Poisson arrivals at RatePerS;
//   - a workload (fixed:PxO, splitwise-conv, ..., trace:PATH; see
//     datasets.ParseWorkload) arrives as a Poisson process at RatePerS.
//
// With no rate and no recorded times every request arrives at time zero.
func OpenSource(w WorkloadConfig) (Source, int, error) {
	switch {
	case w.Trace == "" && w.Workload == "":
		return nil, 0, fmt.Errorf("simulate workload: no arrivals: give a trace file or a generated workload")
	case w.Trace != "" && w.Workload != "":
		return nil, 0, fmt.Errorf("simulate workload: give a trace file or a generated workload, not both")
	}
	name := w.Workload
	if w.Trace != "" {
		name = "trace:" + w.Trace
	}
	wl, err := datasets.ParseWorkload(name)
	if err != nil {
		return nil, 0, err
	}
	a := datasets.Arrivals{Kind: datasets.ArrivalsPoisson, RateRPS: w.RatePerS}
	switch {
	case wl.Kind == datasets.KindTrace && wl.HasArrivals():
		a.Kind = datasets.ArrivalsReplay
	case w.RatePerS == 0:
		a.Kind = datasets.ArrivalsNone
	}
	src, err := datasets.NewSource(wl, a, w.NumRequests, w.Seed)
	if err != nil {
		return nil, 0, fmt.Errorf("simulate workload: %w", err)
	}
	if a.Kind == datasets.ArrivalsNone {
		return atTimeZero{src}, src.Len(), nil
	}
	return src, src.Len(), nil
}
