package simulate

import (
	"testing"
)

// With pipeline parallelism vLLM's engine core runs from a batch queue
// (v1/engine/core.py, step_with_batch_queue): it blocks on the oldest batch
// once nothing is schedulable, and reads new requests only after a batch
// returns. A request arriving while a batch is in flight, even with stage 0
// free, starts in the batch scheduled when that batch returns, sharing it
// with the requests already running; an idle engine starts it on arrival.
func TestPipelineBatchQueueAdmitsAtBatchReturn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		arriveS func(steps []StepRecord) float64
		// wantStep is the step (index into the run without the new
		// request) whose end starts the new request's first batch; -1:
		// it starts on arrival.
		wantStep int
	}{
		{"stage 0 busy", func(s []StepRecord) float64 { return midStage(s[3], 0) }, 3},
		{"stage 0 free, stage 1 busy", func(s []StepRecord) float64 { return midStage(s[3], 1) }, 3},
		{"idle engine", afterLast, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Layout.PP = 2
			_, _, alone, _ := simulate(t, cfg, reqs([3]float64{0, 100, 8}))
			arrS := tc.arriveS(alone.steps)
			_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 100, 8}, [3]float64{arrS, 300, 4}))
			var first *StepRecord
			for i := range log.steps {
				if log.steps[i].PrefillTokens >= 300 {
					first = &log.steps[i]
					break
				}
			}
			wantS, wantSeqs := arrS, 1
			if tc.wantStep >= 0 {
				wantS, wantSeqs = alone.steps[tc.wantStep].EndS, 2
			}
			if first == nil {
				t.Fatalf("arrived at %.6f s: never scheduled", arrS)
			}
			if !near(first.StartS, wantS) {
				t.Fatalf("arrived at %.6f s: first batch scheduled at %.6f s, want %.6f s", arrS, first.StartS, wantS)
			}
			if first.Seqs != wantSeqs {
				t.Errorf("first batch holds %d requests, want %d (the running request's decode shares it)", first.Seqs, wantSeqs)
			}
			for i, s := range log.steps {
				inFlight := 0
				for _, o := range log.steps[:i] {
					if o.EndS > s.StartS {
						inFlight++
					}
				}
				if inFlight >= cfg.Layout.PP {
					t.Fatalf("step %d scheduled with %d batches in flight, PP is %d", i, inFlight, cfg.Layout.PP)
				}
			}
		})
	}
}

// midStage is the middle of a step's time on stage s.
func midStage(r StepRecord, s int) float64 { return (r.Stages[s].StartS + r.Stages[s].EndS) / 2 }
