package datasets

import (
	"container/heap"
	"fmt"
	"math"
	"sort"
)

// QueueProbe runs a serving system at an arrival rate and reports whether
// its waiting queue stays bounded (see QueueBounded for the definition).
// search.NewCapacityProbe implements it with package simulate; datasets
// does not depend on simulate.
type QueueProbe interface {
	Bounded(rateRPS float64) (bool, error)
}

// SearchCapacity returns the capacity of the system behind p: the highest
// arrival rate, in requests per second, at which its queue stays bounded.
// It needs the queue bounded at lo and unbounded at hi (0 < lo < hi), then
// bisects geometrically (the midpoint of lo and hi is sqrt(lo*hi)) until
// hi/lo <= 1+tol, and returns lo: a rate known to be bounded, within a
// factor 1+tol of the capacity. A run of probes is deterministic when the
// probe is (fixed seed and request count), so the search is too.
func SearchCapacity(p QueueProbe, lo, hi, tol float64) (float64, error) {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return 0, fmt.Errorf("capacity search: need 0 < lo < hi, got lo %g, hi %g", lo, hi)
	}
	if !(tol > 0) {
		return 0, fmt.Errorf("capacity search: tolerance must be > 0, got %g", tol)
	}
	ok, err := p.Bounded(lo)
	if err != nil {
		return 0, fmt.Errorf("capacity search at %g req/s: %w", lo, err)
	}
	if !ok {
		return 0, fmt.Errorf("capacity search: the queue grows even at the lowest rate %g req/s: lower it", lo)
	}
	if ok, err = p.Bounded(hi); err != nil {
		return 0, fmt.Errorf("capacity search at %g req/s: %w", hi, err)
	}
	if ok {
		return 0, fmt.Errorf("capacity search: the queue stays bounded even at the highest rate %g req/s: raise it", hi)
	}
	return searchBracketed(p, lo, hi, tol)
}

// searchBracketed bisects between a bounded lo and an unbounded hi.
func searchBracketed(p QueueProbe, lo, hi, tol float64) (float64, error) {
	if !(tol > 0) {
		return 0, fmt.Errorf("capacity search: tolerance must be > 0, got %g", tol)
	}
	for hi/lo > 1+tol {
		mid := math.Sqrt(lo * hi)
		ok, err := p.Bounded(mid)
		if err != nil {
			return 0, fmt.Errorf("capacity search at %g req/s: %w", mid, err)
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// maxBracketSteps bounds FindCapacity's doubling or halving: 2^40 spans
// any sensible range of rates.
const maxBracketSteps = 40

// FindCapacity brackets the capacity by doubling (or halving) the rate from
// startRPS until the queue flips between bounded and unbounded, then
// narrows it with SearchCapacity. It returns the capacity and the number of
// probes run.
func FindCapacity(p QueueProbe, startRPS, tol float64) (float64, int, error) {
	if !(startRPS > 0) || math.IsInf(startRPS, 0) {
		return 0, 0, fmt.Errorf("capacity search: start rate must be > 0, got %g", startRPS)
	}
	counted := &countingProbe{p: p}
	ok, err := counted.Bounded(startRPS)
	if err != nil {
		return 0, counted.n, fmt.Errorf("capacity search at %g req/s: %w", startRPS, err)
	}
	lo, hi := startRPS, startRPS
	for step := 0; ; step++ {
		if step == maxBracketSteps {
			return 0, counted.n, fmt.Errorf("capacity search: no bounded/unbounded pair of rates between %g and %g req/s", lo, hi)
		}
		if ok {
			lo, hi = hi, hi*2
			ok, err = counted.Bounded(hi)
			if !ok && err == nil {
				break
			}
		} else {
			hi, lo = lo, lo/2
			ok, err = counted.Bounded(lo)
			if ok && err == nil {
				break
			}
		}
		if err != nil {
			return 0, counted.n, fmt.Errorf("capacity search: %w", err)
		}
	}
	c, err := searchBracketed(counted, lo, hi, tol)
	return c, counted.n, err
}

// countingProbe counts probes.
type countingProbe struct {
	p QueueProbe
	n int
}

func (c *countingProbe) Bounded(r float64) (bool, error) {
	c.n++
	return c.p.Bounded(r)
}

// MaxQueueGrowth is the largest growth of the waiting queue, per arrival,
// that QueueBounded still calls bounded: 2 requests per 100 arrivals.
const MaxQueueGrowth = 0.02

// QueueBounded is ftk's definition of a bounded queue. waiting holds the
// number of requests waiting (arrived, not yet scheduled) seen by each
// arrival, in arrival order, over one run at a constant offered rate. The
// first quarter is warm-up; the queue is bounded when the mean waiting count
// over the last quarter exceeds that over the second quarter by at most
// MaxQueueGrowth per arrival between the two (n/2 arrivals), with a floor
// of one request. An overloaded system accumulates 1 - capacity/rate of
// every arrival, so this calls a rate unbounded once it exceeds capacity by
// about 2%. Runs shorter than 8 arrivals are too short to tell and count as
// bounded.
func QueueBounded(waiting []int) bool {
	n := len(waiting)
	if n < 8 {
		return true
	}
	mean := func(v []int) float64 {
		s := 0.0
		for _, x := range v {
			s += float64(x)
		}
		return s / float64(len(v))
	}
	q2 := mean(waiting[n/4 : n/2])
	q4 := mean(waiting[3*n/4:])
	return q4-q2 <= math.Max(1, MaxQueueGrowth*float64(n)/2)
}

// WaitingAtArrivals returns, for each request in arrival order, how many
// earlier requests are still waiting when it arrives: arrived but not yet
// started. arrivalS and startS are indexed alike (startS[i] is when
// request i left the queue: scheduled, or its first token as a proxy); a
// NaN start (a rejected request) never waits. The result feeds
// QueueBounded. arrivalS must be sorted ascending.
func WaitingAtArrivals(arrivalS, startS []float64) ([]int, error) {
	if len(arrivalS) != len(startS) {
		return nil, fmt.Errorf("waiting at arrivals: %d arrivals but %d start times", len(arrivalS), len(startS))
	}
	if !sort.Float64sAreSorted(arrivalS) {
		return nil, fmt.Errorf("waiting at arrivals: arrival times are not sorted")
	}
	waiting := make([]int, len(arrivalS))
	var starts floatHeap
	for i, a := range arrivalS {
		for starts.Len() > 0 && starts[0] <= a {
			heap.Pop(&starts)
		}
		waiting[i] = starts.Len()
		if !math.IsNaN(startS[i]) && startS[i] > a {
			heap.Push(&starts, startS[i])
		}
	}
	return waiting, nil
}

// floatHeap is a min-heap of times.
type floatHeap []float64

func (h floatHeap) Len() int           { return len(h) }
func (h floatHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h floatHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *floatHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *floatHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// RateForLoad returns the arrival rate for a load given as a fraction of
// capacity: load x capacityRPS (for example a measured pilot throughput in
// completed requests per second).
func RateForLoad(load, capacityRPS float64) (float64, error) {
	if !(load > 0) || math.IsInf(load, 0) {
		return 0, fmt.Errorf("load must be a fraction of capacity > 0, got %g", load)
	}
	if !(capacityRPS > 0) || math.IsInf(capacityRPS, 0) {
		return 0, fmt.Errorf("capacity must be > 0 requests/s, got %g", capacityRPS)
	}
	return load * capacityRPS, nil
}
