package simulate

import (
	"fmt"

	"github.com/ftk-dev/ftk/runresult"
)

// Router picks the replica an arriving request goes to.
type Router interface {
	// Pick returns an index into outstanding, the number of requests each
	// replica holds (admitted and not finished).
	Pick(outstanding []int) int
}

// RoundRobin sends requests to the replicas in turn.
type RoundRobin struct{ next int }

// Pick implements Router.
func (r *RoundRobin) Pick(outstanding []int) int {
	i := r.next % len(outstanding)
	r.next = i + 1
	return i
}

// LeastLoaded sends each request to the replica with the fewest outstanding
// requests, the lowest index on ties.
type LeastLoaded struct{}

// Pick implements Router.
func (LeastLoaded) Pick(outstanding []int) int {
	best := 0
	for i, n := range outstanding {
		if n < outstanding[best] {
			best = i
		}
	}
	return best
}

// NewRouter returns the router named name.
func NewRouter(name string) (Router, error) {
	switch name {
	case runresult.RouterRoundRobin:
		return &RoundRobin{}, nil
	case runresult.RouterLeastLoaded:
		return LeastLoaded{}, nil
	}
	return nil, fmt.Errorf("unknown router %q: use %s or %s", name, runresult.RouterRoundRobin, runresult.RouterLeastLoaded)
}
