package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
)

// TestHostTimelinePublicPoints replays the published runs the host
// timeline is checked against (publicrun/runs: vLLM issue #45709, PR
// #23151, vllm-omni issue #7960; TestPublicRuns holds each metric to its
// record's bound): every eager run must be slower than its graph run, and
// the eager #45709 run host-bound, as measured.
func TestHostTimelinePublicPoints(t *testing.T) {
	tpot := map[string]float64{}
	for _, name := range []string{"#45709 eager", "#45709 graphs", "#23151 H100", "#7960 thinker eager", "#7960 thinker graphs"} {
		p := publicRunNamed(t, name)
		sum, _, log := replayRun(t, runConfig(p), p)
		tpot[p.Name] = sum.Metrics.TPOTMs.Mean
		bound := 0
		for _, s := range log.steps {
			if c := s.Stages[0].Cost; c.Ms[cost.CompLaunch] > c.DeviceMs() {
				bound++
			}
		}
		t.Logf("%-22s %-8s TPOT %6.2f ms, TTFT %.1f ms; throughput %.1f tok/s; %d%% of steps host-bound", p.Name, p.Role,
			tpot[p.Name], sum.Metrics.TTFTMs.Mean, sum.Metrics.OutputTokenThroughputPerS, 100*bound/max(len(log.steps), 1))
		if p.Name == "#45709 eager" && bound < len(log.steps)*9/10 {
			t.Errorf("%s: %d of %d steps host-bound, want nearly all", p.Name, bound, len(log.steps))
		}
	}
	for _, pair := range [][2]string{{"#45709 eager", "#45709 graphs"}, {"#7960 thinker eager", "#7960 thinker graphs"}} {
		if !(tpot[pair[0]] > tpot[pair[1]]) {
			t.Errorf("%s TPOT %.2f ms not above %s %.2f ms", pair[0], tpot[pair[0]], pair[1], tpot[pair[1]])
		}
	}
}

// BLIS's trained-physics latency model (inference-sim,
// docs/guide/latency-models.md, fitted on vLLM v0.15.1 step traces on
// H100 with CUDA graphs) has a per-step fixed overhead of about 126 us and
// 4 us per request. ftk's nearest figure is the host time around a
// one-sequence CUDA-graph decode step of Llama-3.1-8B on an H100 (host
// before and after, the replay); the test reports it and checks it stays
// within a factor of three of BLIS's (different fits of different runs).
func TestHostStepOverheadVsBLIS(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.ExecutionMode = runresult.ExecCUDAGraph
	_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 100, 4}))
	c := log.steps[len(log.steps)-1].Stages[0].Cost
	overheadUs := (c.Ms[cost.CompHostBefore] + c.Ms[cost.CompHostAfter] + c.Ms[cost.CompLaunch]) * 1e3
	const blisUs = 126 + 4
	t.Logf("host overhead of a 1-sequence graph decode step: ftk %.0f us, BLIS beta7 + beta6 %d us (%+.0f%%)", overheadUs, blisUs, 100*(overheadUs-blisUs)/blisUs)
	if overheadUs < blisUs/3 || overheadUs > 3*blisUs {
		t.Errorf("ftk's per-step host overhead %.0f us is more than 3x away from BLIS's fitted %d us", overheadUs, blisUs)
	}
}
