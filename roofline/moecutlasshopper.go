package roofline

import "github.com/ftk-dev/ftk/spec"

// FlashInfer's CUTLASS fused MoE on Hopper (FlashInferExperts), which vLLM
// 0.24 runs for per-tensor FP8 checkpoints and for block FP8 under expert
// parallelism (KernelsFor). It is priced with the FlashInfer layer's form
// (FlashInferMoE.LayerUs, moeblackwell.go: floor, per-token and
// per-routed-row work, and the larger of the experts' weight stream, read
// again in part per further 128-token tile, and the MMA over whole tiles)
// with terms fitted on AIConfigurator's vLLM 0.24.0 H100 SXM moe rows of
// that kernel (testdata/aiconfigurator-0.24/h100_sxm, balanced routing,
// every fifth row held out: cost.TestHopperCutlassMoERefit). The
// alignment (moe_shuffling) runs inside FlashInfer's kernel; vLLM's top-k
// routing runs before it (the routing op).

// hopperCutlassMoE are the terms per weight dtype. With the tile fixed at
// 128 tokens only ComputeEff x 128 / (128 + TileHalfTokens) is
// identified (0.148 of the FP8 peak for fp8, 0.570 for fp8_block); block
// FP8's pair is stored at ComputeEff 0.8. Held out: fp8 17.6% (the rows
// are not monotonic in the tokens at 16-2,048: FlashInfer's tactic
// without vLLM's warm-up autotuning, which the form does not follow),
// fp8_block 8.9%.
var hopperCutlassMoE = map[MoETermsKey]FlashInferMoE{
	{Kernel: MoEFlashInferCutlass, Dtype: "fp8"}:       {FloorUs: 28.66, TokenPs: 2.485, RowPs: 4.243, MemEff: 0.1898, RereadShare: 0.256, ComputeEff: 0.1783, TileHalfTokens: 26.62, FixedTileTokens: 128, WidthTile: 128},
	{Kernel: MoEFlashInferCutlass, Dtype: "fp8_block"}: {FloorUs: 20.8, TokenPs: 3.452, RowPs: 8.678, MemEff: 0.8473, RereadShare: 0.3369, ComputeEff: 0.8, TileHalfTokens: 51.53, FixedTileTokens: 128, WidthTile: 128},
}

// hopperCutlassMoEUs prices the MoE ops of a layer that runs FlashInfer's
// CUTLASS MoE on Hopper, as MoEByFormat names it for o's weight format
// (ok false: not priced here).
func (r Roofline) hopperCutlassMoEUs(o *spec.Op, x []float64) (us float64, ok bool) {
	if r.Device == nil || r.Device.Arch != spec.ArchHopper || r.moeKernel(o) != MoEFlashInferCutlass {
		return 0, false
	}
	f, found := r.Device.Curves.FlashInferMoETerms(MoEFlashInferCutlass, moeDtype(o))
	if !found {
		return 0, false
	}
	switch o.Name {
	case spec.OpMoEShuffling:
		return 0, true
	case spec.OpMoEGroupedGEMM:
		if len(x) == 0 || x[0] <= 0 {
			return 0, true
		}
		return f.LayerUs(o, x, r.Device), true
	}
	return 0, false
}
