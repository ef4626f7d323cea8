package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/spec"
)

// The rate search finds the highest passing grid rate of a monotone
// system from any start, with or without a pruning threshold, and prunes
// exactly when the threshold is out of reach.
func TestSearchRate(t *testing.T) {
	g := grid{tol: 0.02}
	for _, c := range []struct {
		name          string
		capacity      float64 // passes at rates <= capacity
		start, minK   int
		hasMin        bool
		wantPruned    bool
		wantFound     bool
		wantCapped    bool
		wantBestRates float64
	}{
		{"from below", 37, 0, 0, false, false, true, false, 37},
		{"from above", 0.7, 200, 0, false, false, true, false, 0.7},
		{"threshold reachable", 37, 0, g.ceil(20), true, false, true, false, 37},
		{"threshold out of reach", 37, 0, g.ceil(40), true, true, false, false, 0},
		{"nothing passes", 1e-4, 0, 0, false, false, false, false, 0},
		{"everything passes", 1e9, 0, 0, false, false, true, true, g.rate(g.ceil(gridMaxRPS))},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			probe := func(r float64, _ bool) (Probe, error) {
				calls++
				return Probe{RateRPS: r, Pass: r <= c.capacity*(1+1e-12)}, nil
			}
			o, err := searchRate(g, probe, c.start, c.minK, c.hasMin)
			if err != nil {
				t.Fatal(err)
			}
			if o.pruned != c.wantPruned || o.found != c.wantFound || o.capped != c.wantCapped {
				t.Fatalf("pruned %v found %v capped %v", o.pruned, o.found, o.capped)
			}
			if c.wantPruned && calls != 1 {
				t.Errorf("pruning took %d probes, want 1", calls)
			}
			if o.found {
				best := g.rate(o.best)
				if best > c.wantBestRates*(1+1e-9) || g.rate(o.best+1) <= c.wantBestRates && !c.wantCapped {
					t.Errorf("best %g: not the highest grid rate <= %g", best, c.wantBestRates)
				}
			}
			if calls > 30 {
				t.Errorf("%d probes", calls)
			}
		})
	}
}

// sureMiss is the smallest number of values above a limit that forces the
// percentile above it, checked against spec's percentile on random data.
func TestSureMiss(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []int{50, 90, 95, 99} {
		for _, n := range []int{1, 2, 7, 20, 101, 400} {
			tg := Target{Metric: "ttft", Percentile: p, LimitMs: 100}
			k := tg.sureMiss(n)
			for trial := 0; trial < 50; trial++ {
				v := make([]float64, n)
				for i := range v {
					v[i] = rng.Float64() * 100 // at or below the limit
				}
				for i := 0; i < k && i < n; i++ {
					v[i] = 100 + rng.Float64()
				}
				sort.Float64s(v)
				if got := spec.PercentileSorted(v, float64(p)); !(got > 100) {
					t.Fatalf("p%d of %d values, %d over: %g is not over the limit", p, n, k, got)
				}
				if k > 1 { // one fewer over the limit, just over it, the rest at 0: passes
					w := make([]float64, n)
					for i := 0; i < k-1; i++ {
						w[i] = 100.000001
					}
					sort.Float64s(w)
					if got := spec.PercentileSorted(w, float64(p)); got > 100 {
						t.Fatalf("p%d of %d values, %d over: %g already over, so %d is not the smallest", p, n, k-1, got, k)
					}
				}
			}
		}
	}
}

func TestParseSLO(t *testing.T) {
	s, err := ParseSLO("ttft_p95_ms=500, tpot_p99_ms=50,e2e_p50_ms=2000")
	if err != nil || len(s) != 3 || s[1] != (Target{"tpot", 99, 50}) || s.String() != "ttft_p95_ms=500,tpot_p99_ms=50,e2e_p50_ms=2000" {
		t.Fatalf("%v %v", s, err)
	}
	for _, bad := range []string{"", "ttft=5", "ttft_p95_ms", "itl_p95_ms=5", "ttft_p97_ms=5", "ttft_p95_ms=-1", "ttft_p95_ms=1,ttft_p95_ms=2", "ttft_p95_s=3"} {
		if _, err := ParseSLO(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParsePools(t *testing.T) {
	p, err := ParsePools("h100:8,h200:4", "h100=2.5,h200=3.5")
	if err != nil || len(p) != 2 || p[1] != (Pool{"h200", 4, 3.5}) {
		t.Fatalf("%v %v", p, err)
	}
	for _, c := range [][2]string{{"", ""}, {"h100", ""}, {"h100:0", ""}, {"x100:8", ""}, {"h100:8,h100:2", ""}, {"h100:8", "h200=3"}, {"h100:8,h200:8", "h100=2"}, {"h100:8", "h100=0"}} {
		if _, err := ParsePools(c[0], c[1]); err == nil {
			t.Errorf("%q %q accepted", c[0], c[1])
		}
	}
}

// Every candidate fits its pool, is listed once, and DP, PP, EP and
// disaggregation appear where the model allows them.
func TestEnumerate(t *testing.T) {
	for _, model := range []string{"llama-3.1-8b", "qwen3-30b-a3b"} {
		m, _ := spec.LookupModel(model)
		s := Space{Model: m, Pools: []Pool{{Device: "h100", GPUs: 8}, {Device: "h200", GPUs: 4}}, MaxNumSeqs: []int{128, 512}, MaxNumBatchedTokens: []int{256, 8192},
			ExecutionModes: []string{runresult.ExecCUDAGraph, runresult.ExecEager}, Modes: []string{runresult.ModeColocated, runresult.ModeDisaggregated}}
		cs, err := s.Enumerate()
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		seen := map[string]bool{}
		for _, c := range cs {
			pool := 8
			if c.Device == "h200" {
				pool = 4
			}
			if c.GPUs() > pool || c.GPUs() < 1 || c.MaxNumBatchedTokens < c.MaxNumSeqs {
				t.Errorf("%s: %d GPUs in a pool of %d", c.ID(), c.GPUs(), pool)
			}
			if ids[c.ID()] {
				t.Errorf("%s listed twice", c.ID())
			}
			ids[c.ID()] = true
			seen[c.Mode] = true
			l := c.Layout
			seen[fmt.Sprintf("dp>1 %v, pp>1 %v, ep>1 %v", l.DP > 1, l.PP > 1, l.EP > 1)] = true
			seen[fmt.Sprintf("ep>tp %v", l.EP > l.TP)] = true
		}
		for _, want := range []string{runresult.ModeDisaggregated, "dp>1 true, pp>1 false, ep>1 false", "dp>1 false, pp>1 true, ep>1 false"} {
			if !seen[want] {
				t.Errorf("%s: no candidate with %s", model, want)
			}
		}
		if m.IsMoE() != seen["ep>tp true"] {
			t.Errorf("%s: EP = TP x DP candidates %v", model, seen["ep>tp true"])
		}
		if m.IsMoE() != seen["dp>1 false, pp>1 false, ep>1 true"] {
			t.Errorf("%s: EP candidates %v", model, seen["dp>1 false, pp>1 false, ep>1 true"])
		}
	}
}

// The probe's requests are those datasets.OpenRun gives for the same
// workload settings: a candidate's config.yaml replays its probe.
func TestWorkloadMatchesOpenSource(t *testing.T) {
	for _, w := range []runresult.WorkloadConfig{
		{Workload: "fixed:100x10", NumRequests: 50, Seed: 3},
		{Workload: "splitwise-conv", NumRequests: 200, Seed: 1},
		{Trace: "../testdata/traces/splitwise_code.csv", NumRequests: 300},
	} {
		wl, err := newWorkload(w)
		if err != nil {
			t.Fatal(err)
		}
		mine, err := wl.source(7.5)
		if err != nil {
			t.Fatal(err)
		}
		theirs, n, err := datasets.OpenRun(w.Trace, w.Workload, 7.5, w.NumRequests, w.Seed)
		if err != nil {
			t.Fatal(err)
		}
		var a, b []spec.Request
		for r, ok := mine.Next(); ok; r, ok = mine.Next() {
			a = append(a, r)
		}
		for r, ok := theirs.Next(); ok; r, ok = theirs.Next() {
			b = append(b, r)
		}
		if len(a) != n || !reflect.DeepEqual(a, b) {
			t.Errorf("%+v: %d requests against OpenSource's %d, equal %v", w, len(a), n, reflect.DeepEqual(a, b))
		}
	}
}

// What the simulator refuses, and an SLO no rate meets, are rejected with
// the reason.
func TestRejects(t *testing.T) {
	s := smallSettings(t, "ttft_p95_ms=1,tpot_p95_ms=12", 1)
	s.Space.Modes, s.Space.MaxNumSeqs, s.Space.MaxNumBatchedTokens = []string{runresult.ModeColocated}, []int{256}, []int{8192}
	s.Space.TP, s.Space.PP = []int{1}, []int{1}
	out, err := Run(context.Background(), s, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if r.Status != StatusRejected || !strings.Contains(r.Reason, "misses the SLO even at") {
			t.Errorf("%s: %s %q", r.ID, r.Status, r.Reason)
		}
	}
	m, _ := spec.LookupModel("llama-3.3-70b")
	s.Space.Model, s.Base.Model = m, m.Name
	out, err = Run(context.Background(), s, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if r.Status != StatusRejected || !strings.HasPrefix(r.Reason, "simulator: ") || r.Probes != 0 {
			t.Errorf("%s: %s %q after %d probes", r.ID, r.Status, r.Reason, r.Probes)
		}
	}
}

// INV-15: confirmSearch, stopped once the rate can no longer enter the top
// K, stops only where the search run to the end finds a rate below the
// bound it stopped at (so the candidate is outside the top K either way),
// and otherwise finds that search's rate; on holds that are not monotone
// in the rate too (a long run failing at one rate and holding above it).
func TestConfirmStopsOnlyOutside(t *testing.T) {
	g := grid{tol: 0.02}
	rng := rand.New(rand.NewPCG(5, 6))
	stopped := 0
	for trial := range 3000 {
		lowK := rng.IntN(20)
		best := lowK + rng.IntN(60)
		capK := lowK - 1 + rng.IntN(best-lowK+2) // holds at or below capK
		holey := map[int]bool{}                  // non-monotone: fails at a few indices below capK
		for range rng.IntN(3) {
			holey[lowK+rng.IntN(best-lowK+1)] = true
		}
		done := 0.0
		if rng.IntN(2) == 0 {
			done = g.rate(capK) * (1 + 0.05*rng.Float64())
		}
		holds := func(k int) (bool, float64, error) {
			if k == best {
				return k <= capK && !holey[k], done, nil
			}
			return k <= capK && !holey[k], 0, nil
		}
		full := rateOutcome{best: best, found: true}
		if err := confirmSearch(g, &full, lowK, holds, nil); err != nil {
			t.Fatal(err)
		}
		enterK := lowK + rng.IntN(best-lowK+3) // enters the top K at or above enterK
		o := rateOutcome{best: best, found: true}
		if err := confirmSearch(g, &o, lowK, holds, func(k int) bool { return k < enterK }); err != nil {
			t.Fatal(err)
		}
		switch {
		case o.outside:
			stopped++
			if full.found && full.best >= enterK || full.found && full.best > o.bound {
				t.Fatalf("INV-15: trial %d: stopped below %d (enters at %d), the full search finds %d", trial, o.bound+1, enterK, full.best)
			}
		case o.found != full.found || o.found && o.best != full.best || o.unconfirmed != full.unconfirmed:
			t.Fatalf("INV-15: trial %d: found %v at %d, the full search %v at %d", trial, o.found, o.best, full.found, full.best)
		}
	}
	if stopped < 300 {
		t.Errorf("stopped %d times in 3000: the test compares little", stopped)
	}
}
