package simulate

import (
	"math/rand/v2"
	"testing"
)

type recorder struct {
	got []int
	at  []float64
}

func (r *recorder) Handle(nowS float64, kind, arg int) {
	r.got = append(r.got, arg)
	r.at = append(r.at, nowS)
}

// Events come out in time order; ties go by priority, then by the order
// they were scheduled.
func TestLoopOrder(t *testing.T) {
	var l Loop
	r := &recorder{}
	l.Schedule(2, PriorityEngine, r, 0, 5)
	l.Schedule(1, PriorityEngine, r, 0, 2)
	l.Schedule(1, PriorityEngine, r, 0, 3)
	l.Schedule(1, PriorityArrival, r, 0, 1)
	l.Schedule(0.5, PriorityEngine, r, 0, 0)
	l.Schedule(1, PriorityEngine, r, 0, 4)
	for l.Step() {
	}
	for i, v := range r.got {
		if v != i {
			t.Fatalf("INV-5: delivery order %v, want 0..5", r.got)
		}
	}
	if l.Now() != 2 || l.Handled() != 6 || l.Pending() != 0 {
		t.Errorf("INV-5: now %g, handled %d, pending %d", l.Now(), l.Handled(), l.Pending())
	}
}

// A random mix of events comes out sorted, stable within ties.
func TestLoopRandomOrder(t *testing.T) {
	var l Loop
	r := &recorder{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		l.Schedule(float64(rng.IntN(100)), PriorityEngine, r, 0, i)
	}
	for l.Step() {
	}
	for i := 1; i < len(r.got); i++ {
		if r.at[i] < r.at[i-1] || (r.at[i] == r.at[i-1] && r.got[i] < r.got[i-1]) {
			t.Fatalf("INV-5: event %d (t=%g, #%d) after event (t=%g, #%d)", i, r.at[i], r.got[i], r.at[i-1], r.got[i-1])
		}
	}
}

// Scheduling into the past is a bug and panics.
func TestLoopRejectsPast(t *testing.T) {
	var l Loop
	r := &recorder{}
	l.Schedule(1, PriorityEngine, r, 0, 0)
	l.Step()
	defer func() {
		if recover() == nil {
			t.Error("INV-5: no panic for an event in the past")
		}
	}()
	l.Schedule(0.5, PriorityEngine, r, 0, 1)
}
