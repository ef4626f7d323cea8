package datasets

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// queueProbe is a single FIFO server with a fixed service time, fed n
// Poisson arrivals: a system whose capacity is known (1/serviceS).
type queueProbe struct {
	t        *testing.T
	serviceS float64
	n        int
	rates    []float64
}

func (q *queueProbe) Bounded(rateRPS float64) (bool, error) {
	q.rates = append(q.rates, rateRPS)
	reqs, err := Generate(mustWorkload(q.t, "fixed:1x1"), Arrivals{Kind: ArrivalsPoisson, RateRPS: rateRPS}, q.n, 5)
	if err != nil {
		return false, err
	}
	arrival := make([]float64, len(reqs))
	start := make([]float64, len(reqs))
	free := 0.0
	for i, r := range reqs {
		arrival[i] = r.ArrivalS
		start[i] = math.Max(r.ArrivalS, free)
		free = start[i] + q.serviceS
	}
	waiting, err := WaitingAtArrivals(arrival, start)
	if err != nil {
		return false, err
	}
	return QueueBounded(waiting), nil
}

// TestSearchCapacityFindsServiceRate runs the search on a queue of known
// capacity, 10 requests/s: the bounded definition must put it within 10%.
func TestSearchCapacityFindsServiceRate(t *testing.T) {
	p := &queueProbe{t: t, serviceS: 0.1, n: 4000}
	got, err := SearchCapacity(p, 1, 100, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("capacity %.3f req/s (true 10) after %d probes", got, len(p.rates))
	if got < 9 || got > 11 {
		t.Errorf("capacity %.3f req/s, want 10 ± 10%%", got)
	}
	if len(p.rates) > 2+int(math.Ceil(math.Log2(math.Log(100)/math.Log(1.01)))) {
		t.Errorf("%d probes: bisection should need about log2(ln(hi/lo)/ln(1+tol))", len(p.rates))
	}
	again, _ := SearchCapacity(&queueProbe{t: t, serviceS: 0.1, n: 4000}, 1, 100, 0.01)
	if again != got {
		t.Errorf("search is not deterministic: %g then %g", got, again)
	}
}

func TestFindCapacity(t *testing.T) {
	for _, start := range []float64{0.001, 1, 7.3, 5000} {
		got, probes, err := FindCapacity(thresholdProbe{limit: 7.3}, start, 0.01)
		if err != nil || got > 7.3 || got < 7.3/1.01 {
			t.Errorf("start %g: capacity %g (%d probes), %v", start, got, probes, err)
		}
		if probes > 30 {
			t.Errorf("start %g: %d probes", start, probes)
		}
	}
	p := &queueProbe{t: t, serviceS: 0.1, n: 4000}
	if got, _, err := FindCapacity(p, 1, 0.01); err != nil || got < 9 || got > 11 {
		t.Errorf("queue of capacity 10: got %g, %v", got, err)
	}
	if _, _, err := FindCapacity(thresholdProbe{limit: math.Inf(1)}, 1, 0.01); err == nil || !strings.Contains(err.Error(), "no bounded/unbounded pair") {
		t.Errorf("never unbounded: %v", err)
	}
	if _, _, err := FindCapacity(thresholdProbe{limit: 5, err: errors.New("boom")}, 1, 0.01); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("probe error: %v", err)
	}
}

// thresholdProbe is bounded exactly below a rate.
type thresholdProbe struct {
	limit float64
	err   error
}

func (p thresholdProbe) Bounded(r float64) (bool, error) { return r <= p.limit, p.err }

func TestSearchCapacity(t *testing.T) {
	got, err := SearchCapacity(thresholdProbe{limit: 7.3}, 0.5, 50, 0.001)
	if err != nil || got > 7.3 || got < 7.3/1.001 {
		t.Errorf("threshold 7.3: got %g, %v", got, err)
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name        string
		p           QueueProbe
		lo, hi, tol float64
		want        string
	}{
		{"unbounded at lo", thresholdProbe{limit: 0.1}, 1, 10, 0.01, "grows even at the lowest rate 1"},
		{"bounded at hi", thresholdProbe{limit: 100}, 1, 10, 0.01, "stays bounded even at the highest rate 10"},
		{"lo above hi", thresholdProbe{limit: 5}, 10, 1, 0.01, "need 0 < lo < hi"},
		{"zero lo", thresholdProbe{limit: 5}, 0, 1, 0.01, "need 0 < lo < hi"},
		{"zero tolerance", thresholdProbe{limit: 5}, 1, 10, 0, "tolerance must be > 0"},
		{"probe error", thresholdProbe{limit: 5, err: boom}, 1, 10, 0.01, "capacity search at 1 req/s: boom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SearchCapacity(tc.p, tc.lo, tc.hi, tc.tol)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestQueueBounded(t *testing.T) {
	ramp := func(n int, perArrival float64) []int {
		w := make([]int, n)
		for i := range w {
			w[i] = int(perArrival * float64(i))
		}
		return w
	}
	noisy := make([]int, 4000)
	for i := range noisy {
		noisy[i] = 20 + (i*7919)%13 // bounded, fluctuating around 26
	}
	for _, tc := range []struct {
		name    string
		waiting []int
		want    bool
	}{
		{"empty queue", make([]int, 1000), true},
		{"short run", []int{0, 5, 9, 20}, true},
		{"bounded noise", noisy, true},
		{"growing 5% of arrivals", ramp(4000, 0.05), false},
		{"growing 1% of arrivals", ramp(4000, 0.01), true},
		{"growing 3% of arrivals", ramp(4000, 0.03), false},
	} {
		if got := QueueBounded(tc.waiting); got != tc.want {
			t.Errorf("%s: QueueBounded = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestWaitingAtArrivals(t *testing.T) {
	arrival := []float64{0, 1, 2, 3, 4, 5}
	start := []float64{0.5, 3.5, 3.5, math.NaN(), 4, 6}
	got, err := WaitingAtArrivals(arrival, start)
	if err != nil {
		t.Fatal(err)
	}
	// at 1: request 0 started at 0.5; at 2: request 1 waits; at 3: 1 and 2;
	// at 4: none (started 3.5; 3 was rejected; 4 starts on arrival); at 5: none.
	want := []int{0, 0, 1, 2, 0, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waiting %v, want %v", got, want)
		}
	}
	if _, err := WaitingAtArrivals([]float64{1, 0}, []float64{1, 1}); err == nil {
		t.Error("unsorted arrivals accepted")
	}
	if _, err := WaitingAtArrivals([]float64{1}, nil); err == nil {
		t.Error("length mismatch accepted")
	}
}

func TestRateForLoad(t *testing.T) {
	if r, err := RateForLoad(0.7, 4); err != nil || math.Abs(r-2.8) > 1e-12 {
		t.Errorf("RateForLoad(0.7, 4) = %g, %v", r, err)
	}
	for _, bad := range [][2]float64{{0, 4}, {-1, 4}, {0.5, 0}, {math.NaN(), 1}, {0.5, math.Inf(1)}} {
		if _, err := RateForLoad(bad[0], bad[1]); err == nil {
			t.Errorf("RateForLoad(%g, %g) accepted", bad[0], bad[1])
		}
	}
}
