package spec

import (
	"math"
	"testing"
)

// defaultOverTuned is the fused-MoE layer's kernel time (kernelTimesUs:
// the GEMMs, SiLU-and-mul and moe_sum) under vLLM's old default config
// over the same under a tuned one (DefaultTileEff off) on device d.
func defaultOverTuned(t *testing.T, d *Device, o Op, tokens float64) float64 {
	t.Helper()
	tuned := *d
	tuned.Curves.Class[ClassMoEGEMM].DefaultTileEff = 0
	def := kernelTimesUs(d, o, []float64{tokens})[0]
	tun := kernelTimesUs(&tuned, o, []float64{tokens})[0]
	return def / tun
}

// TestDefaultMoEConfigTiles holds the old default config's penalty
// (moeconfig.go) to vLLM PR #34846's H100 measurements: at most 2x over
// the new defaults (taken as tuned) for the many-expert BF16 shapes of its
// benchmarks/kernels/benchmark_moe_defaults.py up to 4,096 tokens, and
// close to that bound where the experts get most rows; and to where it
// applies: beyond the small-batch branch, without a tuned config, BF16 on
// Hopper only.
func TestDefaultMoEConfigTiles(t *testing.T) {
	h100, err := LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	moe := func(experts, width, hidden, topk int) Op {
		return Op{Name: OpMoEGroupedGEMM, Family: FamilyMoE, Kernels: 3, K: hidden, ExpertWidth: width,
			LocalExperts: experts, Experts: experts, TopK: topk, ElemBytes: 2}
	}
	// benchmark_moe_defaults.py's many-expert BF16 shapes (E, N, K, top-k).
	shapes := map[string]Op{
		"Qwen2-MoE":   moe(60, 1408, 2048, 4),
		"DeepSeek-V2": moe(64, 1408, 4096, 6),
		"OLMoE":       moe(64, 2048, 2048, 8),
		"GLM-4-MoE":   moe(128, 1408, 4096, 8),
		"Qwen3-MoE":   moe(128, 768, 2048, 8),
		"DeepSeek-V3": moe(256, 2048, 7168, 8),
		"Qwen3-Next":  moe(512, 512, 2048, 10),
	}
	worst := 0.0
	for name, o := range shapes {
		for _, tokens := range []float64{256, 512, 1024, 2048, 4096} {
			r := defaultOverTuned(t, h100, o, tokens)
			worst = math.Max(worst, r)
			if r > 2 {
				t.Errorf("%s at %.0f tokens: old default %.2fx a tuned config, PR #34846 measured at most 2x", name, tokens, r)
			}
		}
	}
	if worst < 1.8 {
		t.Errorf("largest old-default penalty %.2fx: PR #34846 measured up to 2x at large batches", worst)
	}
	// Qwen3-30B-A3B's 8,192-token step (PR #23151's H100 run, vLLM 0.10,
	// no tuned config): the layer takes well over a tuned config's time.
	if r := defaultOverTuned(t, h100, shapes["Qwen3-MoE"], 8192); r < 1.5 {
		t.Errorf("Qwen3-30B-A3B at 8,192 tokens on an H100: old default %.2fx a tuned config, want at least 1.5x", r)
	}
	t.Logf("largest penalty over the benchmark's shapes: %.2fx; Qwen3-30B-A3B at 8,192 tokens %.2fx", worst, defaultOverTuned(t, h100, shapes["Qwen3-MoE"], 8192))

	l40s, err := LookupDevice("l40s")
	if err != nil {
		t.Fatal(err)
	}
	pro6000, err := LookupDevice("rtxpro6000")
	if err != nil {
		t.Fatal(err)
	}
	fp8 := shapes["Qwen3-MoE"]
	fp8.FP8, fp8.ElemBytes = true, 1
	for _, tc := range []struct {
		name   string
		d      *Device
		o      Op
		tokens float64
	}{
		{"small-batch branch (tokens <= local experts)", h100, shapes["Qwen3-MoE"], 128},
		{"tuned config (Mixtral-8x7B TP2 on H100)", h100, moe(8, 7168, 4096, 2), 4096},
		{"tuned config (Mixtral-8x7B TP8 on H100)", h100, moe(8, 1792, 4096, 2), 4096},
		{"FP8 (roof chosen on its own kernel times)", h100, fp8, 4096},
		{"Ada (vLLM after PR #34846)", l40s, shapes["Qwen3-MoE"], 4096},
		{"Blackwell (vLLM after PR #34846)", pro6000, shapes["Qwen3-MoE"], 4096},
	} {
		if r := defaultOverTuned(t, tc.d, tc.o, tc.tokens); math.Abs(r-1) > 1e-12 {
			t.Errorf("%s: old-default penalty %.3fx, want none", tc.name, r)
		}
	}
}
