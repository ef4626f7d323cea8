package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// fifoStarts is a FIFO queue of servers with random service times fed
// Poisson arrivals at rate (the servers' capacity is servers/meanS): each
// request's start as a first token sees it, part of its service after it
// is taken, so always after its arrival.
func fifoStarts(rng *rand.Rand, n, servers int, rate, meanS float64) (arrivalS, startS []float64) {
	free := make([]float64, servers)
	t := 0.0
	for range n {
		t += rng.ExpFloat64() / rate
		s := 0
		for k := range free {
			if free[k] < free[s] {
				s = k
			}
		}
		begin := math.Max(t, free[s])
		service := meanS * (0.2 + 1.6*rng.Float64())
		free[s] = begin + service
		arrivalS = append(arrivalS, t)
		startS = append(startS, begin+0.3*service)
	}
	return arrivalS, startS
}

// watchRun feeds a run's starts to a QueueWatch in time order and returns
// how many starts it saw when it first said the queue grows (0: never).
func watchRun(t *testing.T, arrivalS, startS []float64) int {
	t.Helper()
	w, err := NewQueueWatch(arrivalS)
	if err != nil {
		t.Fatal(err)
	}
	order := make([]int, len(startS))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return startS[order[a]] < startS[order[b]] })
	for k, i := range order {
		if w.Start(i, startS[i]) {
			return k + 1
		}
	}
	return 0
}

// INV-15: a QueueWatch says the queue grows only where QueueBounded of the
// whole run says so, however few starts it has seen; and an overloaded run
// is decided long before its last start. Rates span half the capacity to
// three times it, with many runs near the bound's edge (capacity +-10%).
func TestQueueWatchDecidesAsQueueBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	decided, unbounded, early := 0, 0, 0
	for trial := range 600 {
		n := []int{8, 9, 40, 401, 2000}[trial%5]
		servers := 1 + trial%3
		load := []float64{0.5, 0.9, 0.97, 1.0, 1.03, 1.06, 1.1, 1.5, 3}[trial%9]
		meanS := 0.01
		arrivalS, startS := fifoStarts(rng, n, servers, load*float64(servers)/meanS, meanS)
		waiting, err := WaitingAtArrivals(arrivalS, startS)
		if err != nil {
			t.Fatal(err)
		}
		bounded := QueueBounded(waiting)
		seen := watchRun(t, arrivalS, startS)
		if seen > 0 && bounded {
			t.Fatalf("INV-15: trial %d (n %d, load %g): the watch said the queue grows after %d starts; QueueBounded of the run says bounded", trial, n, load, seen)
		}
		if !bounded {
			unbounded++
		}
		if seen > 0 {
			decided++
			if load >= 1.5 && seen < n*9/10 {
				early++
			}
		}
		if load >= 1.5 && n >= 400 && (seen == 0 || seen > n*9/10) {
			t.Errorf("trial %d (n %d, load %g): decided after %d of %d starts; an overloaded run should be decided before 90%% of them", trial, n, load, seen, n)
		}
	}
	t.Logf("%d unbounded runs, %d decided by the watch (%d of the overloaded ones before 90%% of their starts)", unbounded, decided, early)
	if decided < unbounded/2 {
		t.Errorf("the watch decided %d of %d unbounded runs", decided, unbounded)
	}
}

// The watch decides nothing where counting by start times alone would
// not be WaitingAtArrivals' count: a start at or before its arrival, a
// refused request (a NaN start: it never waits), starts out of time order
// or a run too short for QueueBounded.
func TestQueueWatchStandsAside(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	arrivalS, startS := fifoStarts(rng, 400, 1, 300, 0.01) // three times the capacity
	if seen := watchRun(t, arrivalS, startS); seen == 0 {
		t.Fatal("the watch never decided a run three times over capacity")
	}
	for _, c := range []struct {
		name  string
		setup func(w *QueueWatch)
	}{
		{"start at its arrival", func(w *QueueWatch) { w.Start(0, arrivalS[0]) }},
		{"refused request", func(w *QueueWatch) { w.Refused() }},
		{"start before the previous one", func(w *QueueWatch) { w.Start(1, startS[1]); w.Start(0, startS[0]-1e-3) }},
		{"unknown request", func(w *QueueWatch) { w.Start(len(arrivalS), arrivalS[len(arrivalS)-1]+1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := NewQueueWatch(arrivalS)
			if err != nil {
				t.Fatal(err)
			}
			c.setup(w)
			for i := range startS {
				if w.Start(i, startS[i]+1e3) { // every start far later: the queue surely grows
					t.Fatalf("decided after %d starts", i+1)
				}
			}
		})
	}
	short := []float64{1, 2, 3, 4, 5, 6, 7}
	w, _ := NewQueueWatch(short)
	for i := range short {
		if w.Start(i, 100+float64(i)) {
			t.Errorf("a run of %d arrivals decided (QueueBounded calls it bounded)", len(short))
		}
	}
	if _, err := NewQueueWatch([]float64{2, 1}); err == nil {
		t.Error("unsorted arrivals accepted")
	}
}

func ExampleQueueWatch() {
	// Ten arrivals a second, one served a second: the queue grows.
	var arrivalS []float64
	for i := range 40 {
		arrivalS = append(arrivalS, float64(i)/10)
	}
	w, _ := NewQueueWatch(arrivalS)
	for i := range arrivalS {
		if w.Start(i, float64(i+1)) {
			fmt.Printf("the queue grows: decided at the start of request %d of %d\n", i, len(arrivalS))
			break
		}
	}
	// Output: the queue grows: decided at the start of request 3 of 40
}
