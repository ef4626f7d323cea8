package simulate

import (
	"testing"
)

// Each data-parallel rank admits as its own engine core: vLLM's
// DPEngineCoreProc runs the same step function as a lone engine core (with
// async scheduling, step_with_batch_queue), and only the forward passes are
// in lockstep. A request reaching a rank whose own batch is in flight under
// async scheduling runs one lockstep step later than without it
// (TestAsyncSchedulingAdmitsOneBatchLate); one reaching a rank that runs a
// dummy batch (execute_dummy_batch, synchronous) runs in the next step.
func TestLockstepRankAdmitsAsItsOwnEngineCore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		async bool
		// busy: the new request's rank has a request of its own running
		// (round-robin: the third request goes to rank 0); otherwise it
		// reaches the idle rank 1.
		busy bool
		// wantStep is the lockstep step (index into the run without the
		// new request) whose end starts its first batch.
		wantStep int
	}{
		{"async, own batch in flight", true, true, 4},
		{"sync, own batch in flight", false, true, 3},
		{"async, dummy batch", true, false, 3},
		{"sync, dummy batch", false, false, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := dpConfig(2, "", 0, 0)
			cfg.Engine.AsyncScheduling = tc.async
			base := reqs([3]float64{0, 100, 40})
			if tc.busy {
				base = reqs([3]float64{0, 100, 40}, [3]float64{0, 100, 40})
			}
			_, _, alone, _ := simulate(t, cfg, base)
			steps := rankSteps(alone.steps, 0)
			arrS := (steps[3].StartS + steps[3].EndS) / 2
			_, _, log, _ := simulate(t, cfg, append(base, reqs([3]float64{arrS, 300, 4})[0]))
			var first *StepRecord
			for i := range log.steps {
				if log.steps[i].PrefillTokens >= 300 {
					first = &log.steps[i]
					break
				}
			}
			wantRank := 1
			if tc.busy {
				wantRank = 0
			}
			if first == nil || first.Replica != wantRank {
				t.Fatalf("arrived at %.6f s: first batch %+v, want one on rank %d", arrS, first, wantRank)
			}
			if want := steps[tc.wantStep].EndS; !near(first.StartS, want) {
				t.Fatalf("arrived at %.6f s: first batch at %.6f s, want %.6f s (end of step %d)", arrS, first.StartS, want, tc.wantStep)
			}
		})
	}
}

// rankSteps are the records of rank r, one per lockstep step.
func rankSteps(all []StepRecord, r int) []StepRecord {
	var out []StepRecord
	for _, s := range all {
		if s.Replica == r {
			out = append(out, s)
		}
	}
	return out
}
