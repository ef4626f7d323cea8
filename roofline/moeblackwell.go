package roofline

import (
	"math"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// On Blackwell (B200, SM100) vLLM runs its fused-MoE layers with
// FlashInfer's kernels, not its Triton fused_moe: vLLM's backend oracles
// (vllm/model_executor/layers/fused_moe/oracle/unquantized.py and fp8.py,
// read on vLLM's main branch in December 2026) try FlashInfer TRT-LLM
// first and FlashInfer CUTLASS next on CUDA devices other than Hopper, and
// AIConfigurator's vLLM 0.24.0 B200 moe rows record those choices, the
// kernel each shape ran (kernel_source:
// ..._flashinfer_trtllm_trtllmbf16experts, ..._trtllmfp8expertsmonolithic,
// ..._flashinfer_cutlass_flashinferexperts, ...).
//
// Both run the layer as a handful of kernels over the permuted tokens:
// (routing,) permutation, the gate/up grouped GEMM with the gated
// activation, the down grouped GEMM and the finalize that un-permutes and
// sums each token's top-k rows. TRT-LLM's monolithic experts take the
// router logits and route inside (TrtLlm*ExpertsMonolithic); the modular
// ones and CUTLASS take vLLM's top-k ids, so vLLM's own routing kernel runs
// before them.
//
// ftk prices the layer (FlashInferMoE.LayerUs) as
//
//	floor + per-token work + per-routed-row work + max(weights, MMA)
//
// where the weights term streams the weights of every expert with tokens
// from HBM once plus RereadShare of them again for each further token tile
// of the expert, and the MMA term runs every tile of TileTokens rows
// (padding included) at a rate that grows with the tile:
// ComputeEff x tile / (tile + TileHalfTokens). TRT-LLM-gen's token tile is
// its launcher's default when no autotuned tactic is given (FlashInfer
// v0.6.12 csrc/trtllm_fused_moe_kernel_launcher.cu, computeSelectedTileN
// and selectDefaultTileN: the power of two at or above num_tokens x top-k
// / local experts, clamped to 8-128, and then the next smaller candidate);
// AIConfigurator's collector builds the layer without vLLM's warm-up
// autotuning, so its rows run that default; a served vLLM autotunes
// FlashInfer's tactics at warm-up (vllm/model_executor/warmup/
// kernel_warmup.py, flashinfer_autotune) and may run faster tiles, which
// no table times: the default is priced (a stated gap). CUTLASS takes a
// fixed tile
// (FixedTileTokens, fitted). The constants are fitted on AIConfigurator's
// vLLM 0.24.0 B200 rows with every fifth row held out
// (cost/moeblackwell_test.go, TestFlashInferMoERefit).

// FlashInferMoE are the terms of one FlashInfer fused-MoE kernel for one
// weight dtype on Blackwell.
type FlashInferMoE struct {
	// FloorUs is the layer's time at no work: its kernels' launches and
	// tails in one CUDA-graph replay.
	FloorUs float64
	// TokenPs is picoseconds per hidden element of each token of the
	// batch (routing, activation quantization, finalize), RowPs per
	// hidden-plus-width element of each routed row (permutation and the
	// intermediate activation).
	TokenPs, RowPs float64
	// MemEff is the share of HBM bandwidth the expert weights stream at;
	// RereadShare the share of an expert's weights read again for each
	// token tile past its first.
	MemEff, RereadShare float64
	// ComputeEff is the MMA roof at large tiles (of the dtype's dense
	// peak); TileHalfTokens the tile rows at which half of it is reached.
	ComputeEff, TileHalfTokens float64
	// FixedTileTokens is the token tile of a kernel that does not follow
	// TRT-LLM-gen's tile rule (CUTLASS); 0: that rule.
	FixedTileTokens float64
	// PadWidth rounds each expert's width per GPU up to a multiple of it,
	// weights included (vLLM pads BF16 weights for TRT-LLM to 128,
	// convert_to_unquantized_kernel_format / align_moe_weights_for_fi);
	// 0: none.
	PadWidth int
	// WidthTile runs the MMA over the width in whole tiles of it, the
	// weights unpadded (CUTLASS's SM100 grouped-GEMM tiles are 64, 128 or
	// 256 wide, get_candidate_configs_sm100_dynamic_cluster_shape in
	// FlashInfer v0.6.12's cutlass_heuristic.cpp: 128 taken, the fit
	// between them); 0: none.
	WidthTile float64
}

// The FlashInfer MoE kernels Kernels.MoE names: vLLM's MoE backends
// (--moe-backend) as AIConfigurator's kernel sources name them, TRT-LLM's
// split by whether vLLM or the kernel routes.
const (
	// MoEFlashInferTRTLLM: FlashInfer's TRT-LLM-gen experts, routing
	// inside the kernel (TrtLlm*ExpertsMonolithic, TrtLlmBf16Experts).
	MoEFlashInferTRTLLM = "flashinfer_trtllm"
	// MoEFlashInferTRTLLMModular: the same kernels on vLLM's top-k ids
	// (TrtLlm*ExpertsModular).
	MoEFlashInferTRTLLMModular = "flashinfer_trtllm_modular"
	// MoEFlashInferCutlass: FlashInfer's CUTLASS fused MoE
	// (FlashInferExperts).
	MoEFlashInferCutlass = "flashinfer_cutlass"
)

// MoEKernel returns the MoE kernel an AIConfigurator moe kernel_source
// names (vllm_<method>_<backend>_<experts>), "" for kernels the device
// model has no terms of (Triton, Marlin, ...: the device's default).
func MoEKernel(kernelSource string) string {
	switch {
	case strings.Contains(kernelSource, "_flashinfer_trtllm_") && strings.HasSuffix(kernelSource, "modular"):
		return MoEFlashInferTRTLLMModular
	case strings.Contains(kernelSource, "_flashinfer_trtllm_"):
		return MoEFlashInferTRTLLM
	case strings.Contains(kernelSource, "_flashinfer_cutlass_"):
		return MoEFlashInferCutlass
	}
	return ""
}

// moeDtype is the weight dtype of a MoE op as the tables name it.
func moeDtype(o *spec.Op) string {
	switch {
	case !o.FP8:
		return "bfloat16"
	case o.FP8Block:
		return "fp8_block"
	}
	return "fp8"
}

// blackwellMoE holds the fitted terms per kernel and weight dtype
// (TRT-LLM's modular experts are its monolithic kernels: one set). Fitted
// by TestFlashInferMoERefit on AIConfigurator's vLLM 0.24.0 B200 SXM
// moe_perf rows (balanced routing; testdata/aiconfigurator-0.24), every
// fifth row held out; the held-out MAPE of each is in
// docs/validation-kernels.md.
var blackwellMoE = map[MoETermsKey]FlashInferMoE{
	{Kernel: MoEFlashInferTRTLLM, Dtype: "bfloat16"}:  {FloorUs: 19.42, TokenPs: 2.175, RowPs: 0.6413, MemEff: 0.92, RereadShare: 0.1378, ComputeEff: 0.6649, TileHalfTokens: 17.64, PadWidth: 128},
	{Kernel: MoEFlashInferTRTLLM, Dtype: "fp8"}:       {FloorUs: 20.39, TokenPs: 2.773, RowPs: 0.7326, MemEff: 0.8898, RereadShare: 0.1432, ComputeEff: 0.8037, TileHalfTokens: 22.05},
	{Kernel: MoEFlashInferTRTLLM, Dtype: "fp8_block"}: {FloorUs: 34.45, TokenPs: 10.93, RowPs: 0.08942, MemEff: 0.92, RereadShare: 0.4342, ComputeEff: 0.2216, TileHalfTokens: 0.3442},
	{Kernel: MoEFlashInferCutlass, Dtype: "bfloat16"}: {FloorUs: 29.77, TokenPs: 1.995, RowPs: 2.39, MemEff: 0.719, RereadShare: 0.2873, ComputeEff: 0.7767, TileHalfTokens: 9.954, FixedTileTokens: 128, WidthTile: 128},
	{Kernel: MoEFlashInferCutlass, Dtype: "fp8"}:      {FloorUs: 29.4, TokenPs: 2.172, RowPs: 2.156, MemEff: 0.92, RereadShare: 0.04626, ComputeEff: 0.5229, TileHalfTokens: 76.96, FixedTileTokens: 128, WidthTile: 128},
}

// MoETermsKey keys Curves.FlashInferMoE: a kernel (Kernels.MoE's) and a
// weight dtype as the tables name it (bfloat16, fp8, fp8_block).
type MoETermsKey struct{ Kernel, Dtype string }

// FlashInferMoETerms returns the terms of MoE kernel kernel for weight
// dtype dtype (bfloat16, fp8, fp8_block); TRT-LLM's modular experts share
// its monolithic ones' terms.
func (c *Curves) FlashInferMoETerms(kernel, dtype string) (FlashInferMoE, bool) {
	if kernel == MoEFlashInferTRTLLMModular {
		kernel = MoEFlashInferTRTLLM
	}
	f, ok := c.FlashInferMoE[MoETermsKey{kernel, dtype}]
	return f, ok
}

// flashInferMoE returns the terms o is priced with: on a Blackwell device
// whose Kernels.MoE names a FlashInfer kernel with terms for o's dtype.
func (r Roofline) flashInferMoE(o *spec.Op) (FlashInferMoE, bool) {
	k := r.moeKernel(o)
	if k == "" || r.Device == nil || r.Device.Arch != spec.ArchBlackwell {
		return FlashInferMoE{}, false
	}
	return r.Device.Curves.FlashInferMoETerms(k, moeDtype(o))
}

// flashInferMoEUs prices the MoE ops of a layer that runs FlashInfer's
// kernels (ok false: o is not priced here). The grouped GEMM carries the
// whole layer but vLLM's routing; moe_shuffling is inside FlashInfer's
// kernels (no moe_align_block_size: that is the Triton path's), and
// moe_gating_routing_topk is inside the monolithic TRT-LLM kernel.
func (r Roofline) flashInferMoEUs(o *spec.Op, x []float64) (us float64, ok bool) {
	switch o.Name {
	case spec.OpMoEGroupedGEMM, spec.OpMoEShuffling, spec.OpMoERoutingTopK:
	default:
		return 0, false
	}
	k := r.moeKernel(o)
	if k == "" || r.Device == nil || r.Device.Arch != spec.ArchBlackwell {
		return 0, false
	}
	f, found := r.flashInferMoE(o)
	if o.Name == spec.OpMoEGroupedGEMM && !found {
		return 0, false
	}
	switch o.Name {
	case spec.OpMoEShuffling:
		return 0, true
	case spec.OpMoERoutingTopK:
		if k == MoEFlashInferTRTLLM {
			return 0, true
		}
		return 0, false
	}
	if len(x) == 0 || x[0] <= 0 {
		return 0, true
	}
	return f.LayerUs(o, x, r.Device), true
}

// trtllmDefaultTileTokens is TRT-LLM-gen's default token tile for tokens
// tokens of top-k topK over localExperts experts (FlashInfer v0.6.12
// selectDefaultTileN: the candidates around the power of two at or above
// the mean tokens per local expert, clamped to 8-128, smallest first).
func trtllmDefaultTileTokens(tokens, topK, localExperts float64) float64 {
	avg := tokens * topK / math.Max(localExperts, 1)
	t := 8.0
	for t < avg && t < 128 {
		t *= 2
	}
	if t > 8 {
		t /= 2
	}
	return t
}

// LayerUs is the layer's time for o at features x on device d: x[0] routed
// rows on this GPU, the active experts and the batch's tokens as the
// grouped GEMM's features carry them (spec.ActiveExpertsFeature,
// BatchTokensFeature).
func (f FlashInferMoE) LayerUs(o *spec.Op, x []float64, d *Device) float64 {
	rows := x[0]
	tokens := batchTokens(o, x)
	active := o.ActiveExperts(x)
	h, w := float64(o.K), float64(o.ExpertWidth)
	if f.PadWidth > 0 {
		w = math.Ceil(w/float64(f.PadWidth)) * float64(f.PadWidth)
	}
	tile := f.FixedTileTokens
	if tile <= 0 {
		tile = trtllmDefaultTileTokens(tokens, float64(max(o.TopK, 1)), float64(max(o.LocalExperts, 1)))
	}
	tiles := math.Ceil(rows/active/tile - 1e-9)
	mmaW := w
	if f.WidthTile > 0 {
		mmaW = math.Ceil(w/f.WidthTile) * f.WidthTile
	}
	fp8 := o.FP8 && d.PeakFP8TFLOPS > 0
	weights := active * 3 * h * w * float64(o.ElemBytes)
	memUs := (1 + f.RereadShare*(tiles-1)) * weights / (d.HBMGBps * 1e3 * f.MemEff)
	mmaFLOPs := active * tiles * tile * 6 * h * mmaW
	mmaUs := mmaFLOPs / (d.PeakTFLOPS(fp8) * 1e6 * f.ComputeEff * tile / (tile + f.TileHalfTokens))
	return f.FloorUs + (tokens*h*f.TokenPs+rows*(h+w)*f.RowPs)/1e6 + math.Max(memUs, mmaUs)
}
