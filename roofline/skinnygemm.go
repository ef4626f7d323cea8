package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Decode-sized ("skinny") GEMMs: a few token rows against a weight matrix.
// Two things set their time besides the weight stream.
//
// Tile rows. Hopper kernels for few rows use 64-row output tiles, not
// 128: vLLM's SM90 CUTLASS dispatch (csrc/quantization/cutlass_w8a8/c3x/
// scaled_mm_sm90_fp8_dispatch.cuh) runs M in [1, 64] with a 64x64x128 tile
// and M in (64, 128] with 64x128x128, 128x128x128 beyond; 64 rows is the
// smallest M of one warpgroup's wgmma instruction (PTX ISA, "Asynchronous
// Warpgroup Level Matrix Multiply-Accumulate": m64nNk16). cuBLAS's BF16
// kernel choice is not public: ftk takes the same 64-row tile up to 128
// rows for every GEMM (a stated approximation; Ampere has its own tiles,
// gemmtiles.go), so a
// 1-token GEMM pays for 64 padded rows of tensor-core work, not 128. Its
// 128 columns are kept (the SMs-per-tile split below is unchanged).
//
// The K loop. Each thread block walks the K dimension one tile step at a
// time, loading a slab of both operands and waiting for it before its MMA
// (the mainloop of a CUTLASS/cuBLAS GEMM); with few rows the blocks are
// short of work and this chain of dependent steps, not bandwidth, sets the
// time when the weights are small or K is long. On Frontier's H800
// KERNEL_ONLY profiles a 16-column router GEMM (0.13 MB of weights) takes
// 5.0 us at K = 2,048 and 6.3-6.8 us at K = 4,096, and Phi-tiny-MoE's QKV
// projection at K = 4,096 takes 7.0 us for 512 and for 768 columns (4.2
// and 6.3 MB), while 4.2 MB over K = 512 takes 3.4 us. Priced like the
// fused-MoE kernel's K loop (moegemm.go): the class's IterUs per K step, a
// latency floor under the weight stream (max, not sum). The step is 128
// bytes of each operand row (64 BF16 or 128 FP8 elements: the K extent of
// the configs above and of CUTLASS's default 128x128x64 BF16 tile). SGLang
// PR #38168 measured cuBLAS at 1.13-1.69x the time of a bandwidth-bound
// kernel at small batch: consistent with a latency term on top of the
// stream.

// gemmTileKBytes is the bytes of one operand row one K step covers.
const gemmTileKBytes = 128

// smallTileMaxRows is the most token rows a GEMM runs with 64-row tiles.
const smallTileMaxRows = 128

// gemmTileRows is the output tile's rows of a GEMM over tokens rows.
func gemmTileRows(tokens float64) float64 {
	if tokens <= smallTileMaxRows {
		return 64
	}
	return 128
}

// gemmKLoop is the K steps of one thread block of GEMM o; 0 for an op that
// is not a dense GEMM.
func gemmKLoop(o *spec.Op) float64 {
	if o.N <= 0 || o.K <= 0 || ClassOf(o.Name) != ClassGEMM {
		return 0
	}
	return math.Ceil(float64(o.K*max(o.ElemBytes, 1)) / gemmTileKBytes)
}

// Split K. Past 64 steps a GEMM of at most two 128-column tiles splits its
// K loop over the idle SMs: on AIConfigurator's H100 SXM BF16 gemm rows
// (vLLM 0.14.0, F.linear under a CUDA graph) a GEMM of 1-128 tokens and
// 32-256 columns follows the K loop up to K = 3,584 (6.3 us, 56 steps)
// and then stays at 5.9-6.6 us from K = 4,096 to 16,384, where one
// block's loop would take 16.6 us; Frontier's H800 router GEMM at K =
// 4,096 (64 steps) takes the whole loop (6.3-6.8 us, above). Wider GEMMs
// do not split as far: at 16 tokens, 512 columns the rows grow 7.1, 7.7,
// 8.4 us over K = 5,120, 6,144, 8,192 (the whole loop: 6.7-10.0 us), and
// 768-1,024 columns likewise, so they keep the whole loop (a stated
// approximation between the two). So such a block's loop is at most
// kLoopSplitSteps steps or its share of a split over the idle SMs
// (Roofline.splitK), whichever is more.

// kLoopSplitSteps is the longest K loop a GEMM runs unsplit (64 steps of
// 128 bytes: K = 4,096 in BF16).
const kLoopSplitSteps = 64

// kLoopSplitMaxN is the most output columns of a GEMM whose K loop splits.
const kLoopSplitMaxN = 256

// splitKLoop is the K steps one thread block of GEMM o runs over tokens
// rows once the loop is split: iters when it is at most kLoopSplitSteps
// or o has more than kLoopSplitMaxN columns.
func (r Roofline) splitKLoop(o *spec.Op, iters, tokens float64) float64 {
	if iters <= kLoopSplitSteps || o.N > kLoopSplitMaxN {
		return iters
	}
	return math.Max(kLoopSplitSteps, math.Ceil(iters/r.splitK(tokens, o.N, o.K)))
}
