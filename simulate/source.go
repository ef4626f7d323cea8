package simulate

import (
	"github.com/ftk-dev/ftk/spec"
)

// Source yields the arrivals of a run in time order, one at a time, so that
// a trace of any length runs in bounded memory (datasets.OpenRun opens one). A
// Source that can fail part way also has an Err() error method, which Run
// checks when Next reports the end.
type Source interface {
	// Next returns the next request, or false after the last.
	Next() (spec.Request, bool)
}

// FeedbackSource is a Source whose later arrivals wait for earlier
// requests to finish: closed-loop clients (*datasets.Clients is one). For
// it, Next returning false means "nothing until another request
// completes"; the run tells it of every request that finished (or was
// refused) with Complete, then takes every request it can send, whose
// arrival may not be before the completion. The run ends when nothing is
// in flight and Next has nothing.
type FeedbackSource interface {
	Source
	Complete(id int, finishS float64)
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

// pull schedules the next arrival of an open-loop source, or every request
// a closed-loop one can send now.
func (s *Simulation) pull() {
	for s.scheduleNext() && s.fb != nil && s.err == nil {
	}
}

// completed tells a closed-loop source that request id finished (or was
// refused) at nowS, and schedules what it sends in reply.
func (s *Simulation) completed(id int, nowS float64) {
	if s.fb != nil {
		s.fb.Complete(id, nowS)
		s.pull()
	}
}
