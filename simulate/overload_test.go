package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
)

// A run offered more than the engines serve says so (Metrics.Overload),
// with the offered rate above the completed one; stable, closed-loop and
// all-at-once runs do not.
func TestOverloadWarning(t *testing.T) {
	for _, c := range []struct {
		name string
		w    runresult.WorkloadConfig
		want bool
	}{
		{"rate 50 on a ~21 req/s engine", runresult.WorkloadConfig{Workload: "fixed:1024x256", RatePerS: 50, NumRequests: 2000, Seed: 1}, true},
		{"rate 80, short run", runresult.WorkloadConfig{Workload: "fixed:1024x256", RatePerS: 80, NumRequests: 300, Seed: 2}, true},
		{"rate 10", runresult.WorkloadConfig{Workload: "fixed:1024x256", RatePerS: 10, NumRequests: 2000, Seed: 1}, false},
		{"rate 19, near capacity but stable", runresult.WorkloadConfig{Workload: "fixed:1024x256", RatePerS: 19, NumRequests: 2000, Seed: 3}, false},
		{"rate 25, 15% over capacity", runresult.WorkloadConfig{Workload: "fixed:1024x256", RatePerS: 25, NumRequests: 3000, Seed: 1}, true},
		{"rate 21, at capacity but stable", runresult.WorkloadConfig{Workload: "fixed:1024x256", RatePerS: 21, NumRequests: 3000, Seed: 1}, false},
		{"all at time 0", runresult.WorkloadConfig{Workload: "fixed:1024x256", NumRequests: 2000, Seed: 1}, false},
		{"64 closed-loop clients", runresult.WorkloadConfig{Workload: "fixed:1024x256", Clients: 64, NumRequests: 2000, Seed: 1}, false},
	} {
		cfg := testConfig()
		cfg.Workload = c.w
		src, _, err := datasetsRun(c.w)
		if err != nil {
			t.Fatal(err)
		}
		sim, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := sim.Run(src)
		if err != nil {
			t.Fatalf("INV-12: %s: %v", c.name, err)
		}
		o := sum.Metrics.Overload
		if (o != nil) != c.want {
			t.Errorf("INV-12: %s: overload %+v, want %v", c.name, o, c.want)
			continue
		}
		if o != nil && !(o.OfferedRatePerS > 1.1*o.CompletedRatePerS && o.WaitingLastQuarter > o.WaitingSecondQuarter) {
			t.Errorf("INV-12: %s: overload %+v: offered should exceed completed and the queue grow", c.name, o)
		}
	}
}

// queueTrend keeps at most queueSamples samples spread over every arrival:
// a queue growing linearly over 1,000,000 arrivals is an overload, a
// constant one is not.
func TestQueueTrendFixedMemory(t *testing.T) {
	var grow, flat queueTrend
	for i := 0; i < 1_000_000; i++ {
		grow.add(float64(i)/100, i/10)
		flat.add(float64(i)/100, 200+i%7)
	}
	if len(grow.samples) > queueSamples || len(grow.samples) < queueSamples/2 {
		t.Fatalf("%d samples, want %d..%d", len(grow.samples), queueSamples/2, queueSamples)
	}
	o := grow.overload(1000, 10_000)
	if o == nil || o.OfferedRatePerS < 99.9 || o.OfferedRatePerS > 100.1 || o.WaitingLastQuarter < 2*o.WaitingSecondQuarter {
		t.Errorf("growing queue: %+v", o)
	}
	if o := flat.overload(1000, 10_000); o != nil {
		t.Errorf("flat queue: %+v", o)
	}
}

// datasetsRun opens a workload's arrivals, closed-loop clients included.
func datasetsRun(w runresult.WorkloadConfig) (Source, int, error) {
	return datasets.RunArrivals{Workload: w.Workload, RatePerS: w.RatePerS, Clients: w.Clients, ThinkS: w.ThinkS,
		N: w.NumRequests, Seed: w.Seed}.Open()
}

// A stable engine whose running batch is still filling when the arrivals
// end (E2E long against the run: qwen3-30b-a3b DP8 at 50 req/s, 500
// requests; docs/simulate.md's example runs it at 20, where the built-in model's
// engine now keeps up with about 120 requests in the system) has a growing
// system but no growing queue: no warning.
func TestNoOverloadWhileFilling(t *testing.T) {
	cfg := testConfig()
	cfg.Model, cfg.Router = "qwen3-30b-a3b", "least-loaded"
	cfg.Layout.TP, cfg.Layout.EP, cfg.Layout.DP = 1, 8, 8
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:1024x256", RatePerS: 50, NumRequests: 500, Seed: 1}
	sim, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	src, _, err := datasetsRun(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sim.Run(src)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Metrics.PeakConcurrency < 300 || sum.Metrics.Overload != nil {
		t.Errorf("peak %d requests in the system (want a filling system, >= 300), overload %+v (want none)", sum.Metrics.PeakConcurrency, sum.Metrics.Overload)
	}
}
