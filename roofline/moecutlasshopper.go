package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// FlashInfer's CUTLASS fused MoE on Hopper (FlashInferExperts), which vLLM
// 0.24 runs for per-tensor FP8 checkpoints and for block FP8 under expert
// parallelism (KernelsFor). The alignment (moe_shuffling) runs inside
// FlashInfer's kernel; vLLM's top-k routing runs before it (the routing
// op), and vLLM's prepare step quantizes the activations to FP8 with the
// checkpoint's static scale before the kernel (per-token work).
//
// Block FP8 is priced with the FlashInfer layer's form
// (FlashInferMoE.LayerUs, moeblackwell.go: floor, per-token and
// per-routed-row work, the larger of the experts' weight stream and the
// MMA over whole 128-token tiles), terms fitted on AIConfigurator's vLLM
// 0.24.0 H100 SXM moe rows of that kernel (testdata/aiconfigurator-0.24/
// h100_sxm, balanced routing, every fifth row held out:
// cost.TestHopperCutlassMoERefit). With the tile fixed at 128 tokens only
// ComputeEff x 128 / (128 + TileHalfTokens) is identified; the pair is
// stored at ComputeEff 0.8. Held out 8.9%.
//
// Per-tensor FP8 is priced by its tiles (CutlassTileMoE).

// hopperCutlassMoE are the FlashInfer-form terms per weight dtype (block
// FP8; per-tensor FP8 is hopperCutlassFP8MoE).
var hopperCutlassMoE = map[MoETermsKey]FlashInferMoE{
	{Kernel: MoEFlashInferCutlass, Dtype: "fp8_block"}: {FloorUs: 20.8, TokenPs: 3.452, RowPs: 8.678, MemEff: 0.8473, RereadShare: 0.3369, ComputeEff: 0.8, TileHalfTokens: 51.53, FixedTileTokens: 128, WidthTile: 128},
}

// CutlassTileMoE prices FlashInfer's CUTLASS fused MoE by the CTA tiles
// of its two grouped GEMMs, as it runs per-tensor FP8 on Hopper without
// autotuning.
//
// What runs: FlashInfer's cutlass_fused_moe (FlashInfer v0.6.12, the
// release vLLM 0.24.0 pins) picks its GEMM tactics through its autotuner;
// outside tuning, with no tuned entry for the shape, choose_one returns
// the fallback tactic -1 (flashinfer/autotuner.py), and the runner then
// takes the first GEMM-1 and the first GEMM-2 profile
// (csrc/fused_moe/cutlass_backend/flashinfer_cutlass_fused_moe_binding.cu,
// setRunnerProfiles). On SM90 an FP8 x FP8 grouped GEMM's profiles list
// the TMA warp-specialized tiles first, CtaShape128x16x128B at the head
// (get_candidate_tiles_sm90 in cutlass_heuristic.cpp: 128x16, 128x32,
// 128x64, ... for GROUPED_GEMM without WEIGHT_ONLY; cluster 1x1x1; swap-AB
// and finalize-fused copies come after), in MoeGemmRunner's
// getTmaWarpSpecializedConfigs order; activations are the tile's M side.
// AIConfigurator's vLLM 0.24.0 collector (collector/vllm/collect_moe.py
// at d5bad971c) builds the FusedMoE layer and replays its forward in a
// CUDA graph without vLLM's warm-up autotuning, so its rows time that
// tactic: a CTA covers 128 token rows of one expert and 16 output
// columns, stepping over K 128 elements at a time. A served vLLM
// autotunes FlashInfer's tactics at warm-up (vllm/model_executor/warmup/
// kernel_warmup.py) and may run wider tiles, which no table times: the
// default tactic is priced (a stated gap).
//
// Each grouped GEMM runs, for every expert with rows, ceil(rows / 128)
// token tiles times ceil(N / 16) column tiles; gate/up has N = 2 x width
// (width for non-gated experts, relu2_no_mul), K = hidden; down has N =
// hidden, K = width. A CTA costs TileUs plus IterUs for each 128-deep K
// step; the CTAs spread over the SMs in whole waves. With 16 columns a
// tile the work is not the MMA's (a 128x16x128 step is about 64 clocks of
// an SM's FP8 tensor cores, 0.035 us, against the 0.43 us fitted): it is
// the fixed cost of a CTA and of a K step, so narrow experts (TP-split
// widths of 16-192) cost by their column tiles, not their FLOPs. The
// rows show a K step taking less time the fuller its token tile
// (measured latency falls 20-30% as an expert's rows grow from 64 to 128
// before the second tile starts, e.g. 2,816/704/8/128: 1,482 us at 16
// tokens, 1,032 us at 2,048): a step costs IterUs x (1 - FullShare x
// fill), fill the tile's share of real rows, fitted, its cause not read
// in the source. Floor, per-token and per-routed-row terms are the
// FlashInfer form's (routing-side work, expansion, activation,
// finalize).
type CutlassTileMoE struct {
	// FloorUs is the layer's time at no work; TokenPs picoseconds per
	// hidden element of each batch token, RowPs per hidden-plus-width
	// element of each routed row.
	FloorUs, TokenPs, RowPs float64
	// TileUs is a CTA's fixed time, IterUs one K step of an empty tile;
	// FullShare the share of IterUs a full token tile saves.
	TileUs, IterUs, FullShare float64
	// TileTokens x TileCols x TileK is the CTA tile (elements).
	TileTokens, TileCols, TileK float64
}

// hopperCutlassFP8MoE are the H100 terms of per-tensor FP8: the tile is
// FlashInfer v0.6.12's first SM90 grouped-GEMM tactic (above); the rest is
// fitted by cost.TestHopperCutlassMoERefit on AIConfigurator's vLLM 0.24.0
// H100 SXM moe rows of vllm_modeloptfp8moe_flashinfer_cutlass_flashinferexperts
// (balanced routing, testdata/aiconfigurator-0.24/h100_sxm), every fifth
// row held out: fitted 8.3% MAPE, held out 8.4%.
var hopperCutlassFP8MoE = CutlassTileMoE{FloorUs: 22.04, TokenPs: 3.485, RowPs: 2.330, TileUs: 0.7765, IterUs: 0.4271, FullShare: 0.4976,
	TileTokens: 128, TileCols: 16, TileK: 128}

// gemmUs is one grouped GEMM of n output columns over k on sms SMs:
// active experts of rows token rows each.
func (f CutlassTileMoE) gemmUs(active, rows, n, k float64, sms int) float64 {
	colTiles := math.Ceil(n/f.TileCols - 1e-9)
	steps := math.Ceil(k/f.TileK - 1e-9)
	full := math.Floor(rows/f.TileTokens + 1e-9)
	ctas, us := full, full*(f.TileUs+steps*f.IterUs*(1-f.FullShare))
	if rest := rows - full*f.TileTokens; rest > 1e-9 {
		ctas++
		us += f.TileUs + steps*f.IterUs*(1-f.FullShare*rest/f.TileTokens)
	}
	if ctas <= 0 || colTiles <= 0 {
		return 0
	}
	// Every CTA of an expert's tiles costs the same; waves of the SMs.
	ctas *= active * colTiles
	return math.Ceil(ctas/float64(sms)-1e-9) * us / (ctas / (active * colTiles))
}

// LayerUs is the layer's time for o at features x on device d: x[0]
// routed rows on this GPU over the active experts
// (spec.ActiveExpertsFeature), the batch's tokens
// (spec.BatchTokensFeature).
func (f CutlassTileMoE) LayerUs(o *spec.Op, x []float64, d *Device) float64 {
	rows := x[0]
	active := o.ActiveExperts(x)
	h, w := float64(o.K), float64(o.ExpertWidth)
	n1 := 2 * w
	if o.NonGatedExperts {
		n1 = w
	}
	sms := max(d.SMs, 1)
	return f.FloorUs + (batchTokens(o, x)*h*f.TokenPs+rows*(h+w)*f.RowPs)/1e6 +
		f.gemmUs(active, rows/active, n1, h, sms) + f.gemmUs(active, rows/active, h, w, sms)
}

// hopperCutlassMoEUs prices the MoE ops of a layer that runs FlashInfer's
// CUTLASS MoE on Hopper, as Kernels.MoE names it for o's weight format
// (ok false: not priced here). A compressed-tensors FP8 layer
// (spec.Op.CutlassMoE) is not: its checkpoints' per-channel weights with
// dynamic per-token activations (Llama-4-Scout's FP8-dynamic, for one)
// give CompressedTensorsW8A8Fp8MoEMethod the keys (static channel,
// dynamic token), which FlashInferExperts does not take (per-tensor FP8
// only with static scales for both: _supports_quant_scheme in vLLM's
// fused_moe/experts/flashinfer_cutlass_moe.py), so vLLM's FP8 oracle
// (fused_moe/oracle/fp8.py, read at 001a058b; that method allows vLLM's
// CUTLASS) takes its own CUTLASS MoE, which the MoE classes' curves price
// (fp8moe.go).
//
// Per-tensor FP8 is priced by the fallback tactic's tiles
// (CutlassTileMoE) where FlashInfer runs untuned (FlashInferUntuned: the
// kernel tables' rows). A served vLLM autotunes the tactic at warm-up,
// choosing among FlashInfer's SM90 tiles (128x16 to 256x128, swap-AB) the
// fastest for each bucket of tokens, which no table times: the served
// layer is priced with the block-FP8 terms of the same kernel, a proxy
// (a guess, not measured): on the 66 shapes both ran in AIConfigurator's
// vLLM 0.24.0 H100 table, the block-scale path takes 0.29 of the
// fallback's time at 16-2,048 tokens (median; 10th-90th percentile
// 0.21-0.56) and 0.64 at 12,288-16,384, and a tuned per-tensor tactic is
// taken to be as fast.
func (r Roofline) hopperCutlassMoEUs(o *spec.Op, x []float64) (us float64, ok bool) {
	if r.Device == nil || r.Device.Arch != spec.ArchHopper || o.CutlassMoE || r.moeKernel(o) != MoEFlashInferCutlass {
		return 0, false
	}
	tiles := r.Device.Curves.CutlassFP8MoE
	dtype := moeDtype(o)
	perTensor := dtype == "fp8" && tiles != nil && r.FlashInferUntuned
	if dtype == "fp8" && !r.FlashInferUntuned {
		dtype = "fp8_block" // the tuned tactic's proxy
	}
	f, found := r.Device.Curves.FlashInferMoETerms(MoEFlashInferCutlass, dtype)
	if !found && !perTensor {
		return 0, false
	}
	switch o.Name {
	case spec.OpMoEShuffling:
		return 0, true
	case spec.OpMoEGroupedGEMM:
		if len(x) == 0 || x[0] <= 0 {
			return 0, true
		}
		if perTensor {
			return tiles.LayerUs(o, x, r.Device), true
		}
		return f.LayerUs(o, x, r.Device), true
	}
	return 0, false
}
