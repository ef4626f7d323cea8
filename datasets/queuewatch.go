package datasets

import (
	"fmt"
	"math"
	"sort"
)

// QueueWatch decides QueueBounded while a run is still going: it is told
// when each request leaves the queue (its start, as WaitingAtArrivals
// takes it), in time order, and says once the queue is surely unbounded:
// QueueBounded(WaitingAtArrivals(arrivalS, startS)) of the whole run is
// then false whatever the starts not yet seen are. A run that only needs
// that verdict can stop there.
//
// The waiting count seen by arrival i is fixed once time passes a_i: a
// request that arrived earlier and has not started by then starts after
// a_i. So when a start at time t is reported, every arrival before t has
// its count, which adds to the quarter's sum it belongs to. Counts not yet
// known are at least zero, so the last quarter's mean over the known ones
// (divided by the quarter's length) is a lower bound of its final mean,
// and once the second quarter is complete, that bound exceeding it by
// more than QueueBounded allows is the final verdict: sums of integers and
// the rounding of the division and subtraction are monotone, so the
// comparison QueueBounded makes on the whole run fails too.
type QueueWatch struct {
	arrivalS []float64
	// starts are the reported start times, ascending; counted is how many
	// of them lie at or before the last arrival given its count.
	starts  []float64
	counted int
	// next is the first arrival whose waiting count is not yet known.
	next   int
	q2, q4 float64 // sums of the known counts of the second and last quarter
	grows  bool
	// off: a start at or before its own arrival was reported (a request
	// that never waits); counting by start times alone then no longer
	// equals WaitingAtArrivals' count of earlier requests, so the watch
	// stops deciding early.
	off bool
}

// NewQueueWatch watches a run of the arrivals arrivalS (request i arrives
// at arrivalS[i], ascending), as WaitingAtArrivals and QueueBounded see it.
func NewQueueWatch(arrivalS []float64) (*QueueWatch, error) {
	if !sort.Float64sAreSorted(arrivalS) {
		return nil, fmt.Errorf("queue watch: arrival times are not sorted")
	}
	return &QueueWatch{arrivalS: arrivalS}, nil
}

// Start reports that request id left the queue at startS; starts come in
// non-decreasing time order, each request's once. It returns true once
// the queue is surely unbounded (and from then on).
func (w *QueueWatch) Start(id int, startS float64) bool {
	if w.grows || w.off {
		return w.grows
	}
	n := len(w.arrivalS)
	if id < 0 || id >= n || !(startS > w.arrivalS[id]) || len(w.starts) > 0 && startS < w.starts[len(w.starts)-1] {
		w.off = true
		return false
	}
	if n < 8 { // QueueBounded calls such a run bounded
		return false
	}
	// Every arrival before startS has its count: the earlier requests
	// that have not started by then (each started request arrived
	// before its start, so one that started by a_i arrived before it).
	for w.next < n && w.arrivalS[w.next] < startS {
		i := w.next
		for w.counted < len(w.starts) && w.starts[w.counted] <= w.arrivalS[i] {
			w.counted++
		}
		waiting := float64(i - w.counted)
		switch {
		case i >= n/4 && i < n/2:
			w.q2 += waiting
		case i >= 3*n/4:
			w.q4 += waiting
		}
		w.next++
	}
	w.starts = append(w.starts, startS)
	if w.next >= n/2 { // the second quarter is complete
		q2 := w.q2 / float64(n/2-n/4)
		q4 := w.q4 / float64(n-3*n/4)
		w.grows = q4-q2 > math.Max(1, MaxQueueGrowth*float64(n)/2)
	}
	return w.grows
}

// Refused reports a request refused on arrival, which never waits (a NaN
// start to WaitingAtArrivals): the watch then decides nothing more early.
func (w *QueueWatch) Refused() { w.off = true }
