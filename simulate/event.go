package simulate

import "fmt"

// Actor receives the events scheduled for it. kind and arg are the actor's
// own: the loop only orders and delivers them.
type Actor interface {
	Handle(nowS float64, kind, arg int)
}

// Priority orders events at the same time: lower first.
type Priority uint8

// Event priorities. Arrivals come before engine events at the same time, so
// an engine that schedules a step at time t sees every request that arrived
// by t.
const (
	PriorityArrival Priority = iota
	PriorityEngine
)

// event is one timed delivery. Events at the same time go by priority, then
// in the order they were scheduled, so a run is deterministic.
type event struct {
	atS   float64
	seq   uint64
	actor Actor
	kind  int32
	arg   int32
	prio  Priority
}

func (a *event) before(b *event) bool {
	if a.atS != b.atS {
		return a.atS < b.atS
	}
	if a.prio != b.prio {
		return a.prio < b.prio
	}
	return a.seq < b.seq
}

// Loop is the discrete-event core: a binary heap of events ordered by time,
// priority and scheduling order. It is independent of any engine policy.
// The zero value is ready to use.
type Loop struct {
	nowS    float64
	seq     uint64
	heap    []event
	handled uint64
}

// Now is the current simulated time in seconds.
func (l *Loop) Now() float64 { return l.nowS }

// Handled is the number of events delivered so far.
func (l *Loop) Handled() uint64 { return l.handled }

// Pending is the number of events waiting.
func (l *Loop) Pending() int { return len(l.heap) }

// Schedule delivers (kind, arg) to a at time atS. An event in the past is a
// bug in the caller and panics.
func (l *Loop) Schedule(atS float64, p Priority, a Actor, kind, arg int) {
	if atS < l.nowS {
		panic(fmt.Sprintf("simulate: event at %g s scheduled at %g s, in the past", atS, l.nowS))
	}
	l.seq++
	l.heap = append(l.heap, event{atS: atS, seq: l.seq, actor: a, kind: int32(kind), arg: int32(arg), prio: p})
	l.up(len(l.heap) - 1)
}

// Step delivers the earliest event and reports whether there was one.
func (l *Loop) Step() bool {
	n := len(l.heap)
	if n == 0 {
		return false
	}
	ev := l.heap[0]
	l.heap[0] = l.heap[n-1]
	l.heap[n-1] = event{}
	l.heap = l.heap[:n-1]
	if n > 1 {
		l.down(0)
	}
	l.nowS = ev.atS
	l.handled++
	ev.actor.Handle(ev.atS, int(ev.kind), int(ev.arg))
	return true
}

func (l *Loop) up(i int) {
	h := l.heap
	for i > 0 {
		p := (i - 1) / 2
		if !h[i].before(&h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (l *Loop) down(i int) {
	h := l.heap
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && h[r].before(&h[c]) {
			c = r
		}
		if !h[c].before(&h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
