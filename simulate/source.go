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
