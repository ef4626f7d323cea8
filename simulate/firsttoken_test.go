package simulate

import (
	"errors"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// firstLog records Options.FirstToken's calls.
type firstLog struct {
	ids   []int
	times []float64
	// stopAt, when > 0, stops the run at that call.
	stopAt int
}

var errStopHere = errors.New("stop here")

func (f *firstLog) first(id int, nowS float64) error {
	f.ids = append(f.ids, id)
	f.times = append(f.times, nowS)
	if f.stopAt > 0 && len(f.ids) == f.stopAt {
		return errStopHere
	}
	return nil
}

// Options.FirstToken sees every completed request's first output token
// once, at its FirstTokenS, in time order (a request refused for its
// length, none): co-located (preemptions,
// speculative decoding), disaggregated (the decode instance's first step,
// not the prefill instance's discarded token) and MoE ranks in lockstep. A
// callback's error stops the run there, and Run returns it.
func TestFirstTokenCallback(t *testing.T) {
	colocated := testConfig()
	colocated.Layout = spec.Layout{TP: 1, DP: 2}
	colocated.Engine.NumGPUBlocksOverride = 300 // preemptions
	colocated.Engine.MaxModelLen = 4096
	colocated.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 20, NumRequests: 400, Seed: 5}
	spec3 := colocated
	spec3.Layout = spec.Layout{TP: 1}
	spec3.Engine.SpeculativeConfig = &spec.Speculative{Method: spec.SpecEagle3, NumSpeculativeTokens: 3, Acceptance: []float64{0.7, 0.45, 0.25}}
	disagg := disaggConfig(1, 2, 20, 50)
	disagg.Engine.MaxModelLen = 4096
	disagg.Workload = colocated.Workload
	lockstep := dpConfig(4, "fixed:900x120", 12, 240)
	for _, c := range []struct {
		name string
		cfg  runresult.Config
	}{{"colocated DP2", colocated}, {"speculative", spec3}, {"disaggregated 1P2D", disagg}, {"lockstep DP4", lockstep}} {
		t.Run(c.name, func(t *testing.T) {
			src, n, err := openSource(c.cfg.Workload)
			if err != nil {
				t.Fatal(err)
			}
			var rs []spec.Request
			for r, ok := src.Next(); ok; r, ok = src.Next() {
				rs = append(rs, r)
			}
			sink, log := &memSink{}, &firstLog{}
			sim, err := New(c.cfg, Options{Requests: sink, FirstToken: log.first})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := sim.Run(NewSliceSource(rs))
			if err != nil {
				t.Fatal(err)
			}
			m := &sum.Metrics
			if m.Completed+m.Rejected != n || len(log.ids) != m.Completed {
				t.Fatalf("INV-15: %d of %d completed, %d rejected, %d first tokens seen", m.Completed, n, m.Rejected, len(log.ids))
			}
			rows := sink.byID()
			seen := map[int]bool{}
			for k, id := range log.ids {
				if seen[id] {
					t.Fatalf("INV-15: request %d's first token seen twice", id)
				}
				seen[id] = true
				if rows[id].Status != runresult.StatusCompleted {
					t.Errorf("request %d (%s) seen", id, rows[id].Status)
				}
				if got, want := log.times[k], rows[id].FirstTokenS; got != want {
					t.Errorf("INV-15: request %d: first token seen at %.9g s, its row says %.9g s", id, got, want)
				}
				if k > 0 && log.times[k] < log.times[k-1] {
					t.Errorf("INV-15: first tokens out of time order: %.9g s after %.9g s", log.times[k], log.times[k-1])
				}
			}
			if c.name == "colocated DP2" && sum.Metrics.Preemptions == 0 {
				t.Error("no preemptions: the case should re-schedule some requests")
			}
			stop := &firstLog{stopAt: m.Completed / 2}
			sim, err = New(c.cfg, Options{Requests: &memSink{}, FirstToken: stop.first})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sim.Run(NewSliceSource(rs)); !errors.Is(err, errStopHere) {
				t.Errorf("the callback's error at call %d: Run returned %v", stop.stopAt, err)
			}
			if len(stop.ids) != stop.stopAt {
				t.Errorf("the run went on after the callback's error: %d calls", len(stop.ids))
			}
		})
	}
}
