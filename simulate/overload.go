package simulate

import "github.com/ftk-dev/ftk/runresult"

// queueSamples is the most samples a queueTrend keeps.
const queueSamples = 1024

// queueTrend samples the waiting queue (requests admitted and not yet
// scheduled, over every engine) as each request arrives, in fixed memory:
// when full it keeps
// every other sample and samples half as often, so the samples stay spread
// evenly over the arrivals. Poisson arrivals see time averages, so the
// samples are the time-average queue over the arrival window.
type queueTrend struct {
	samples       []int32
	every, skip   int
	firstS, lastS float64
	arrivals      int
	firstSet      bool
}

// tick counts an arrival at nowS and reports whether to record a sample
// of the queue now (record).
func (q *queueTrend) tick(nowS float64) bool {
	if !q.firstSet {
		q.firstS, q.firstSet, q.every = nowS, true, 1
	}
	q.lastS = nowS
	q.arrivals++
	if q.skip > 0 {
		q.skip--
		return false
	}
	q.skip = q.every - 1
	return true
}

// heldBehind estimates the requests that arrived after one arriving at
// arrivalS and read at nowS from a held source (Simulation.release), not
// yet in any queue: the arrival rate so far times the wait.
func (q *queueTrend) heldBehind(arrivalS, nowS float64) int {
	if nowS <= arrivalS || !(q.lastS > q.firstS) {
		return 0
	}
	return int(float64(q.arrivals-1) / (q.lastS - q.firstS) * (nowS - arrivalS))
}

// record keeps a sample of the waiting queue.
func (q *queueTrend) record(waiting int) {
	q.samples = append(q.samples, int32(waiting))
	if len(q.samples) == queueSamples {
		for i := 0; i < queueSamples/2; i++ {
			q.samples[i] = q.samples[2*i]
		}
		q.samples = q.samples[:queueSamples/2]
		q.every *= 2
		q.skip = q.every - 1
	}
}

// add is tick and, when due, record.
func (q *queueTrend) add(nowS float64, waiting int) {
	if q.tick(nowS) {
		q.record(waiting)
	}
}

// overloadGrowth and overloadRise are when a run counts as overloaded:
// the mean waiting queue over the last quarter of the arrivals is at least
// 1.5 times that over the second quarter, and at least 16 requests more. A
// queue that grows linearly from empty gives 0.875/0.375 = 2.3 times; a
// stable one about 1 (the first quarter, the warm-up, is left out). The
// waiting queue, not the requests in the system: a stable engine whose
// running batch is still filling up (E2E long against the run) has a
// growing system but no growing queue. Both thresholds are guesses, set so that the
// documented stable examples do not warn and every run at a rate above the
// engines' measured throughput does (simulate/overload_test.go).
const (
	overloadGrowth = 1.5
	overloadRise   = 16
)

// overload reports whether the queue grew through the arrivals.
func (q *queueTrend) overload(completed int, makespanS float64) *runresult.Overload {
	n := len(q.samples)
	if n < 16 || !(q.lastS > q.firstS) {
		return nil // too few arrivals, or all at once: no rate to exceed
	}
	mean := func(v []int32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x)
		}
		return s / float64(len(v))
	}
	second, last := mean(q.samples[n/4:n/2]), mean(q.samples[3*n/4:])
	if last < overloadGrowth*second || last-second < overloadRise {
		return nil
	}
	o := &runresult.Overload{OfferedRatePerS: float64(q.arrivals-1) / (q.lastS - q.firstS),
		WaitingSecondQuarter: second, WaitingLastQuarter: last}
	if makespanS > 0 {
		o.CompletedRatePerS = float64(completed) / makespanS
	}
	return o
}
