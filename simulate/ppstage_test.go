package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
)

// Under pipeline parallelism every stage is its own worker process with
// its own CPU timeline (vLLM V1, v1/worker/gpu_worker.py execute_model): a
// stage after the first takes a batch once the stage before it has issued
// its forward pass and sent the activations' metadata, not once that
// stage's GPU is done; the scheduler output reached it at schedule time, so
// it pays no hand-off of its own on the batch's path; and a stage before
// the last takes its next batch while its GPU still runs this one.
func TestPipelineStagesRunOwnCPUTimelines(t *testing.T) {
	t.Run("host-bound decode", func(t *testing.T) {
		cfg := testConfig()
		cfg.Layout.PP = 2
		cfg.Layout.TP = 2
		cfg.Engine.ExecutionMode = runresult.ExecEager
		// One request: each of its batches crosses an idle pipeline.
		_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 64, 6}))
		checked := 0
		for i, st := range log.steps {
			if st.PrefillTokens > 0 {
				continue
			}
			s0, s1 := st.Stages[0], st.Stages[1]
			if !(s0.Cost.Ms[cost.CompLaunch] > s0.Cost.DeviceMs()) {
				t.Fatalf("INV-8: step %d: stage 0 issues in %.3f ms, GPU %.3f ms; want a host-bound decode", i, s0.Cost.Ms[cost.CompLaunch], s0.Cost.DeviceMs())
			}
			if !near(s1.StartS, s0.CPUEndS) {
				t.Errorf("INV-8: step %d: stage 0 issued by %.6f s, its GPU done at %.6f s; stage 1 took the batch at %.6f s, want when stage 0 had issued",
					i, s0.CPUEndS, s0.EndS, s1.StartS)
			}
			if !(s1.Cost.CoreBeforeMs > 0) {
				t.Fatalf("INV-8: step %d: stage 1 has no hand-off at TP2", i)
			}
			var laid float64
			for _, sp := range st.Stages {
				laid += sp.Cost.TotalMs() / 1e3
			}
			// Stage 1's hand-off and stage 0's GPU tail are off the path.
			hidden := s1.Cost.CoreBeforeMs/1e3 + (s0.EndS - s0.CPUEndS)
			if got := st.EndS - st.StartS; !(got < laid-0.9*hidden) || !(got > laid-1.1*hidden) {
				t.Errorf("INV-8: step %d: %.6f s, want the stage costs laid end to end (%.6f s) less the hidden %.6f s", i, got, laid, hidden)
			}
			checked++
		}
		if checked < 4 {
			t.Fatalf("INV-8: only %d decode steps checked", checked)
		}
	})
	t.Run("worker runs ahead of its GPU", func(t *testing.T) {
		cfg := testConfig()
		cfg.Layout.PP = 2
		cfg.Engine.ExecutionMode = runresult.ExecEager
		cfg.Engine.MaxNumBatchedTokens = 2048
		// Two long prompts arriving together: GPU-bound chunks, two
		// micro-batches in flight.
		_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 4096, 2}, [3]float64{0, 4096, 2}))
		ahead := 0
		for i := 1; i < len(log.steps); i++ {
			p, s := log.steps[i-1].Stages[0], log.steps[i].Stages[0]
			if s.StartS < p.CPUEndS && !near(s.StartS, p.CPUEndS) {
				t.Fatalf("INV-8: step %d: stage 0's worker took it at %.6f s, before it let step %d go at %.6f s", i, s.StartS, i-1, p.CPUEndS)
			}
			if gpu := s.Cost.DeviceMs() / 1e3; s.EndS < p.EndS+gpu && !near(s.EndS, p.EndS+gpu) {
				t.Fatalf("INV-8: step %d: stage 0's GPU done at %.6f s, before step %d's end %.6f s plus its %.6f s", i, s.EndS, i-1, p.EndS, gpu)
			}
			if s.StartS < p.EndS && p.Cost.DeviceMs() > p.Cost.Ms[cost.CompLaunch] {
				ahead++
			}
		}
		if ahead == 0 {
			t.Error("stage 0's worker never took a batch while its GPU ran the one before")
		}
	})
}
