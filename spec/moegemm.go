package spec

import "math"

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

// activeExperts is the local experts that receive tokens for features x
// (Work's count: round-robin profiles touch min(experts, routed); a
// routing draw passes its count as x[ActiveExpertsFeature]).
func (o *Op) activeExperts(x []float64) float64 {
	active := min(float64(o.LocalExperts), x[0])
	if len(x) > ActiveExpertsFeature && x[ActiveExpertsFeature] > 0 {
		active = min(active, x[ActiveExpertsFeature])
	}
	return math.Max(active, 1)
}

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

// groupedGEMMEfficiency is the fraction of the roof the grouped GEMM
// reaches for features x with overheadRows the per-expert overhead in
// token rows (the formula above).
func groupedGEMMEfficiency(o *Op, x []float64, overheadRows float64) float64 {
	r := x[0]
	if r <= 0 {
		return 1
	}
	active := o.activeExperts(x)
	m := r / active
	tokens := r / float64(max(o.TopK, 1))
	bm := fusedMoEBlockM(tokens, float64(max(o.LocalExperts, 1)))
	return m / (bm*math.Ceil(m/bm) + overheadRows)
}

// ridgeRows is the token rows of one expert whose MMA time at roof (of
// the FP8 or the dense peak) equals the time to stream that expert's
// weights at memEff of HBM bandwidth: 6 FLOPs per row per weight
// element (the gate/up and down GEMMs, two FLOPs per multiply-add) against
// ElemBytes per weight element.
func (r Roofline) ridgeRows(o *Op, roof float64, fp8 bool, memEff float64) float64 {
	d := r.Device
	return float64(o.ElemBytes) * d.PeakTFLOPS(fp8) * 1e12 * roof / (2 * d.HBMGBps * 1e9 * memEff)
}
