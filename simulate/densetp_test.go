package simulate

import (
	"math"
	"strings"
	"testing"
)

// TestDenseTPLambdaRuns replays LambdaLabsML/vllm-benchmark's runs of
// dense models at TP 1-8 on H100 (publicrun/runs/lambda-*.yaml; none was
// fitted, and TestPublicRuns holds each to its bounds and to not
// over-predicting the decode step). vLLM v0.6.0 is the V0 engine, which
// ftk does not model as such: its multi-step scheduling amortises the
// scheduler over 10 steps but keeps per-step host work, so ftk runs it
// with synchronous scheduling, the nearer of its two modes. What this test
// establishes is that ftk's shortfall a decode step is about the same at
// every TP of one model (within 0.25 ms): a per-step cost of that stack,
// not of tensor parallelism.
func TestDenseTPLambdaRuns(t *testing.T) {
	short := map[string][]float64{}
	for _, r := range publicRuns(t) {
		if !strings.HasPrefix(r.Group, "lambda ") {
			continue
		}
		sum, _, _ := replayRun(t, runConfig(r), r)
		step := sum.Metrics.ITLMs.P50
		t.Logf("%-16s median decode step measured %6.2f ms, ftk %6.2f ms", r.Name, r.Measured["itl_p50_ms"], step)
		short[r.Group] = append(short[r.Group], r.Measured["itl_p50_ms"]-step)
	}
	for _, group := range []string{"lambda llama-3-8b", "lambda mistral-nemo"} {
		s := short[group]
		if len(s) < 2 {
			t.Fatalf("%s: %d runs in publicrun/runs, want every TP of the model", group, len(s))
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range s {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		if hi-lo > 0.25 {
			t.Errorf("%s: ftk's shortfall a step ranges %.2f-%.2f ms over TP; want the same per-step cost at every TP (within 0.25 ms)", group, lo, hi)
		}
	}
}
