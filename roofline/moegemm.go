package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// The fused-MoE grouped GEMM (vLLM's fused_moe Triton kernel) multiplies
// each expert's tokens by that expert's weights in tiles of BLOCK_SIZE_M
// token rows. Its compute efficiency depends on the tokens per expert m,
// not on the total: an expert's rows are padded up to whole tiles (p rows),
// and each tile loads its slice of the expert's weights before its MMA
// work, which few rows cannot hide. ftk prices it as
//
//	eff = ComputeEff x m / (p + TileLoadShare x ridge)
//
// where ridge is the rows whose MMA time on the device (at ComputeEff)
// equals the time to stream the expert's weights (at MemEff): the grouped
// GEMM's time is its padded MMA time plus TileLoadShare of its weight
// stream. At a few tokens per expert (decode; the H800 profiles hold 1-35)
// that is about the weight stream; at many (a 2,048-token prefill chunk of
// a 128-expert top-8 model: m = 128) it nears ComputeEff's roof. The ridge
// is the device's own, so a card with little compute per byte (RTX 4090 D)
// pays fewer overhead rows than an H800.

// fusedMoEBlockM is BLOCK_SIZE_M of vLLM's default fused-MoE config for
// tokens tokens over experts local experts: 16 when tokens <= experts,
// else 64 (vllm/model_executor/layers/fused_moe/fused_moe.py,
// get_default_config, v0.8-v0.10; vLLM PR #19049's A100 log shows it:
// BLOCK_SIZE_M 16 for batch sizes 1-96 of Qwen3-30B-A3B's 128 experts).
// Tuned configs (configs/E=...,N=....json) differ per device; ftk
// prices every device with the default.
func fusedMoEBlockM(tokens, experts float64) float64 {
	if tokens <= experts {
		return 16
	}
	return 64
}

// fusedMoEBlockK is BLOCK_SIZE_K of the same default config: 64 when
// tokens <= experts (with BLOCK_SIZE_M 16), else 32 (with BLOCK_SIZE_M 64)
// (get_default_config, as above).
func fusedMoEBlockK(tokens, experts float64) float64 {
	if tokens <= experts {
		return 64
	}
	return 32
}

// fusedMoEKLoop is the serial iterations of one program's K loop over the
// two fused_moe_kernel launches of the grouped GEMM at x (the gate/up GEMM
// over the hidden size, the down GEMM over the expert width), in
// BLOCK_SIZE_K steps; 0 for an op that is not the Triton grouped GEMM.
// Each iteration loads a tile of A and of the expert's weights and waits
// for it before its MMA: with few tokens the programs are few and short of
// work, and this chain, not bandwidth, sets the kernel's time. On the H800
// profiles (Frontier, 16 experts, default configs) it shows as a step of
// 4-5 us (Qwen3-30B-A3B-tiny, hidden 2,048) and 10-12 us (Phi-tiny-MoE,
// hidden 4,096) where the tokens first exceed the local experts and
// BLOCK_SIZE_K halves, alike at TP1-8 (expert widths 56-768) and at EP2-8
// whatever the tokens each rank receives.
func fusedMoEKLoop(o *spec.Op, x []float64) float64 {
	if o.Name != spec.OpMoEGroupedGEMM || o.CutlassMoE || len(x) == 0 || x[0] <= 0 {
		return 0
	}
	bk := fusedMoEBlockK(batchTokens(o, x), float64(max(o.LocalExperts, 1)))
	return math.Ceil(float64(o.K)/bk) + math.Ceil(float64(o.ExpertWidth)/bk)
}

// BatchTokensFeature is the index of an optional feature of the grouped
// GEMM after ActiveExpertsFeature: the tokens of the batch on every EP
// rank (a profile row's num_tokens), which picks vLLM's config; 0 or
// absent: estimated from the routed rows (batchTokens). Fitted predictors
// never see it.
const BatchTokensFeature = 3

// batchTokens is the tokens of the batch whose routed rows x[0] are on this
// rank: the M vLLM picks its config by (the hidden states' rows, on every
// EP rank alike). Unless x[BatchTokensFeature] gives it, the ranks are
// taken to share the token-expert pairs evenly: x[0] x EP / top-k, EP
// being Experts / LocalExperts (1 when Experts is unset). A profile's
// whole routed counts make that coarse at a few tokens (Phi-tiny-MoE at
// EP8: 1 routed row for 2 and for 4 tokens).
func batchTokens(o *spec.Op, x []float64) float64 {
	if len(x) > BatchTokensFeature && x[BatchTokensFeature] > 0 {
		return x[BatchTokensFeature]
	}
	ep := 1.0
	if o.Experts > 0 && o.LocalExperts > 0 {
		ep = float64(o.Experts) / float64(o.LocalExperts)
	}
	return x[0] * ep / float64(max(o.TopK, 1))
}

// groupedGEMMEfficiency is the fraction of the roof the grouped GEMM
// reaches for features x with overheadRows the per-expert overhead in
// token rows (the formula above) and its tiles' MMA at tileEff of the
// roof's rate (moeconfig.go; 1 under a tuned config).
func groupedGEMMEfficiency(o *spec.Op, x []float64, overheadRows, tileEff float64) float64 {
	r := x[0]
	if r <= 0 {
		return 1
	}
	active := o.ActiveExperts(x)
	m := r / active
	bm := fusedMoEBlockM(batchTokens(o, x), float64(max(o.LocalExperts, 1)))
	return m / (bm*math.Ceil(m/bm)/tileEff + overheadRows)
}

// ridgeRows is the token rows of one expert whose MMA time at roof (of
// the FP8 or the dense peak) equals the time to stream that expert's
// weights at memEff of HBM bandwidth: 6 FLOPs per row per weight
// element (the gate/up and down GEMMs, two FLOPs per multiply-add) against
// ElemBytes per weight element.
func (r Roofline) ridgeRows(o *spec.Op, roof float64, fp8 bool, memEff float64) float64 {
	d := r.Device
	return float64(o.ElemBytes) * d.PeakTFLOPS(fp8) * 1e12 * roof / (2 * d.HBMGBps * 1e9 * memEff)
}
