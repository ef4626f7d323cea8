package simulate

import (
	"testing"
)

// Async scheduling admits late: vLLM's engine core schedules batch n+1
// while batch n runs and adds new requests only between its blocking waits
// (v1/engine/core.py, step_with_batch_queue), so a request arriving during
// batch n first runs in batch n+2, one batch later than without async
// scheduling. When nothing was left to schedule ahead, it runs at once in
// the batch after the one it arrived in, and an idle engine starts it on
// arrival in both modes.
func TestAsyncSchedulingAdmitsOneBatchLate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		async   bool
		output  int // of the request already running
		arriveS func(steps []StepRecord) float64
		// wantStep is the step (index into the run without the new
		// request) whose end starts the new request's first batch; -1:
		// it starts on arrival.
		wantStep int
	}{
		{"sync, mid-step", false, 40, midStep(3), 3},
		{"async, mid-step", true, 40, midStep(3), 4},
		{"async, nothing scheduled ahead", true, 2, midStep(1), 1},
		{"async, idle engine", true, 2, afterLast, -1},
		{"sync, idle engine", false, 2, afterLast, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Engine.AsyncScheduling = tc.async
			_, _, alone, _ := simulate(t, cfg, reqs([3]float64{0, 100, float64(tc.output)}))
			arrS := tc.arriveS(alone.steps)
			_, sink, log, _ := simulate(t, cfg, reqs([3]float64{0, 100, float64(tc.output)}, [3]float64{arrS, 300, 4}))
			var startS float64 = -1
			for _, s := range log.steps {
				if s.PrefillTokens >= 300 {
					startS = s.StartS
					break
				}
			}
			wantS := arrS
			if tc.wantStep >= 0 {
				wantS = alone.steps[tc.wantStep].EndS
			}
			if startS < 0 || !near(startS, wantS) {
				t.Fatalf("arrived at %.6f s: first batch at %.6f s, want %.6f s (end of step %d)", arrS, startS, wantS, tc.wantStep)
			}
			for _, r := range sink.rows {
				if r.RequestID == 1 && !(r.FirstTokenS > startS) {
					t.Errorf("first token at %.6f s, before its batch started at %.6f s", r.FirstTokenS, startS)
				}
			}
		})
	}
}

// midStep is the middle of step i.
func midStep(i int) func([]StepRecord) float64 {
	return func(steps []StepRecord) float64 { return (steps[i].StartS + steps[i].EndS) / 2 }
}

// afterLast is a moment after the last step, the engine idle.
func afterLast(steps []StepRecord) float64 { return steps[len(steps)-1].EndS + 0.01 }
