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
			t.Fatalf("%s: %v", c.name, err)
		}
		o := sum.Metrics.Overload
		if (o != nil) != c.want {
			t.Errorf("%s: overload %+v, want %v", c.name, o, c.want)
			continue
		}
		if o != nil && !(o.OfferedRatePerS > 1.2*o.CompletedRatePerS && o.InSystemLastQuarter > o.InSystemSecondQuarter) {
			t.Errorf("%s: overload %+v: offered should exceed completed and the queue grow", c.name, o)
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
	if o == nil || o.OfferedRatePerS < 99.9 || o.OfferedRatePerS > 100.1 || o.InSystemLastQuarter < 2*o.InSystemSecondQuarter {
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
