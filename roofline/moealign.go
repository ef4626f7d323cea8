package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// moe_shuffling, as vLLM's fused-MoE Triton path runs it, moves no hidden
// states: the grouped GEMM gathers each expert's rows through a sorted
// index. What runs is moe_align_block_size
// (vllm/model_executor/layers/fused_moe/moe_align_block_size.py and
// csrc/moe/moe_align_sum_kernels.cu), which counts the token-expert
// pairs (the topk_ids) per expert, pads each expert's count to whole
// BLOCK_SIZE_M tiles and writes the sorted pair indices:
//
//   - up to alignSmallBatchIds ids and alignSmallBatchExperts experts it
//     is one kernel, moe_align_block_size_small_batch_expert_kernel, on a
//     single block whose max(experts, 32) counting threads loop over the
//     ids twice, once to count and once to place them;
//   - beyond, two kernels: moe_align_block_size_kernel counts on one block
//     of 1,024 threads, then count_and_sort_expert_tokens_kernel places
//     the ids with atomics on the per-expert offsets;
//   - under expert parallelism, expert_ids = expert_map[expert_ids] maps
//     the global expert of every tile to the local one: one more (PyTorch
//     index) kernel. vLLM PR #29642 (November 2025) folded the map into
//     the kernel; its RTX 4090 benchmark shows what the extra kernel
//     cost before (16 experts, 1 token: 8.2 us at EP1, 12.3 us at EP8).
//
// The time is the kernels' floors plus the counting loop's serial
// iterations at the class's IterUs. On the H800 profiles (16 experts,
// 1-64 tokens at top-2 and top-8, EP1-8) the per-pair slope is the same
// for Phi-tiny-MoE (hidden 4,096) and Qwen3-30B-A3B-tiny (hidden 2,048),
// which a copy of hidden states would make twice as steep for Phi, and
// EP2-8 rows take one floor (about 4 us) more than EP1 rows at every
// token count. Beyond the small-batch path the loop is priced as two
// passes of 1,024 ids (the count, and the contended atomics of the sort)
// at the same IterUs, a stated approximation: sglang PR #14133's
// benchmark of the same kernels (taken into vLLM by PR #19572) grows by
// about 0.31 us per 1,024 ids (4,096 tokens, 128 experts: 10.5 us at
// top-1, 19.5 us at top-8).
const (
	alignSmallBatchIds     = 1024 // topk_ids.numel() < 1024
	alignSmallBatchExperts = 64   // num_experts <= 64
	alignBlockThreads      = 1024 // the large path's counting block
	warpSize               = 32
)

// alignLoop returns, for the moe_shuffling op o (Op.Experts experts,
// Op.TopK choices a token) at x[0] tokens, the serial iterations of
// moe_align_block_size's counting loop and the kernels it launches
// beyond o.Kernels (the large path's sort kernel); 0, 0 for other ops.
func alignLoop(o *spec.Op, x []float64) (iters float64, extraKernels int) {
	if o.Name != spec.OpMoEShuffling || len(x) == 0 || o.Experts <= 0 || o.TopK <= 0 {
		return 0, 0
	}
	ids := x[0] * float64(o.TopK)
	if ids <= 0 {
		return 0, 0
	}
	if ids < alignSmallBatchIds && o.Experts <= alignSmallBatchExperts {
		threads := float64(max(o.Experts, warpSize))
		return 2 * math.Ceil(ids/threads), 0
	}
	return 2 * math.Ceil(ids/alignBlockThreads), 1
}
