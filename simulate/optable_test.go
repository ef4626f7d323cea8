package simulate

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// The breakdown's per-op table prices the routed MoE ops at the mean of
// the run's routing draws, so on a GPU-bound CUDA-graph run (vLLM issue
// #45709's setup: Qwen3-30B-A3B TP4 on an RTX 4090 D, 8 sequences) its GPU
// total is the decode step the run priced: within 2% of the median ITL
// less the host's share. Priced at even routing it streamed 64 experts a
// layer where the draws touch about 52, 1.7 ms (12%) more.
func TestOpTableMatchesDecodeStep(t *testing.T) {
	cfg := runresult.DefaultConfig()
	cfg.Model, cfg.Device, cfg.Layout = "qwen3-30b-a3b", "rtx4090d", spec.Layout{TP: 4}
	cfg.Engine.ExecutionMode = runresult.ExecCUDAGraph
	cfg.Engine.MaxNumSeqs, cfg.Engine.MaxNumBatchedTokens = 8, 2048
	cfg.Engine.AsyncScheduling = true // host work hides behind the GPU
	rows := make([][3]float64, 16)
	for i := range rows {
		rows[i] = [3]float64{0, 512, 400}
	}
	sum, _, _, _ := simulate(t, cfg, reqs(rows...))
	ot := sum.CostModel.OpTable
	if ot == nil {
		t.Fatal("no op table")
	}
	var gpuMs, gemmMs float64
	for _, r := range ot.Rows {
		gpuMs += r.GPUMs
		if r.Op == spec.OpMoEGroupedGEMM {
			gemmMs = r.GPUMs
		}
	}
	itlMs := sum.Metrics.ITLMs.P50
	t.Logf("op table: %d seqs, GPU %.2f ms (grouped GEMM %.2f ms); run: ITL P50 %.2f ms", ot.DecodeSeqs, gpuMs, gemmMs, itlMs)
	if ot.DecodeSeqs != 8 {
		t.Fatalf("mean decode batch %d, want 8", ot.DecodeSeqs)
	}
	// The replay launch (62 us) and issue leftovers sit between the two.
	if math.Abs(gpuMs-itlMs)/itlMs > 0.02 {
		t.Errorf("op table GPU total %.2f ms, run's median decode step %.2f ms: more than 2%% apart", gpuMs, itlMs)
	}
}
