package simulate

import (
	"reflect"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// An offline batch (every request at t=0) holds only holdWaiting requests
// per engine in memory: the source is read on as the queue drains. The
// run is the same run whatever the hold: every request's row (times,
// latencies, cached tokens, preemptions) and every summary figure equal a
// run that admits everything at once, here with the hold at its least
// (2 x max_num_seqs + 1) against none, on a shared-prefix workload with
// preemptions (few KV blocks; the mean concurrency to 1e-9, summed in another order), with and without async scheduling, and for
// two round-robin replicas.
func TestHeldSourceRunsTheSameRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		async    bool
		replicas int
	}{{"sync", false, 1}, {"async", true, 1}, {"2 replicas", false, 2}} {
		cfg := testConfig()
		cfg.Engine.MaxNumSeqs = 32
		cfg.Engine.MaxModelLen = 2048
		cfg.Engine.NumGPUBlocksOverride = 300
		cfg.Engine.AsyncScheduling = tc.async
		cfg.Layout.DP = tc.replicas
		cfg.Router = runresult.RouterRoundRobin
		cfg.Workload = runresult.WorkloadConfig{Workload: "shared-prefix:groups=16,users=4,system=512,question=256,output=300",
			NumRequests: 3000, Seed: 4}
		run := func(hold int) (*runresult.Summary, *memSink, int) {
			src, _, err := openSource(cfg.Workload)
			if err != nil {
				t.Fatal(err)
			}
			rows := &memSink{}
			sim, err := mustResolve(t, cfg).New(Options{Requests: rows})
			if err != nil {
				t.Fatal(err)
			}
			sim.holdWaiting = hold
			peak := 0
			for _, e := range sim.engines {
				e := e
				e.sched.tookWaiting = func() { peak = max(peak, e.sched.outstanding()); sim.release() }
			}
			sum, err := sim.Run(src)
			if err != nil {
				t.Fatal(err)
			}
			return sum, rows, peak
		}
		all, allRows, allPeak := run(1 << 30)
		held, heldRows, heldPeak := run(2*cfg.Engine.MaxNumSeqs + 1)
		if all.Metrics.Preemptions == 0 || all.Metrics.PrefixCache.HitTokens == 0 {
			t.Fatalf("%s: %d preemptions, %d prefix hits: the test needs both", tc.name, all.Metrics.Preemptions, all.Metrics.PrefixCache.HitTokens)
		}
		if heldPeak >= allPeak/4 || heldPeak > 4*cfg.Engine.MaxNumSeqs {
			t.Errorf("%s: %d requests held by an engine with the hold, %d without", tc.name, heldPeak, allPeak)
		}
		a, h := allRows.byID(), heldRows.byID()
		if len(a) != 3000 || len(h) != 3000 {
			t.Fatalf("%s: %d and %d rows", tc.name, len(a), len(h))
		}
		for id, r := range a {
			if !sameRow(r, h[id]) || r.CachedPromptTokens != h[id].CachedPromptTokens {
				t.Fatalf("%s: request %d differs:\nall  %+v\nheld %+v", tc.name, id, r, h[id])
			}
		}
		// The area under the in-system count is summed in another order.
		if !near(all.Metrics.MeanConcurrency, held.Metrics.MeanConcurrency) {
			t.Errorf("%s: mean concurrency %g, held %g", tc.name, all.Metrics.MeanConcurrency, held.Metrics.MeanConcurrency)
		}
		held.Metrics.MeanConcurrency = all.Metrics.MeanConcurrency
		if !reflect.DeepEqual(all.Metrics, held.Metrics) {
			t.Errorf("%s: metrics differ:\nall  %+v\nheld %+v", tc.name, all.Metrics, held.Metrics)
		}
	}
}
