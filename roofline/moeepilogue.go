package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// vLLM's fused-MoE layer (fused_experts_impl in
// vllm/model_executor/layers/fused_moe/fused_moe.py, v0.10-v0.11) runs four
// kernels one after another: the gate/up grouped GEMM (fused_moe_kernel,
// hidden states -> intermediate_cache1, [M x top-k, 2 x width]),
// torch.ops._C.silu_and_mul (intermediate_cache1 -> intermediate_cache2,
// [M x top-k, width]), the down grouped GEMM (intermediate_cache2 ->
// intermediate_cache3, [M, top-k, hidden]) and ops.moe_sum
// (intermediate_cache3 summed over top-k into the output, [M, hidden];
// csrc/moe/moe_align_sum_kernels.cu: a one-block-per-token kernel for
// top-k 2-4, at::sum_out beyond). The activation and the sum are separate
// memory-bound kernels, so their traffic is not hidden under the GEMMs'
// compute: at a 8,192-token step of Qwen3-30B-A3B (top-8, width 768) they
// move about 0.6 GB a layer.
//
// Both run over every row of the rank's caches: M is the batch's tokens on
// the rank, and with expert parallelism the rows routed to other ranks'
// experts are still there (the GEMMs write zeros for them), so the
// activation covers M x top-k rows, not the rank's routed rows.
//
// What the measurements contain: benchmark_moe.py (vLLM PR #24700, #19049,
// #53710) times fused_experts whole, and Frontier's vllm_fused
// moe_grouped_gemm rows (KERNEL_ONLY: the kernels inside the op's record
// range) hold all four kernels too, so the grouped GEMM's own roofline
// (ClassMoEGEMM) prices the two GEMM launches only and these two kernels
// are added after it, each on its own class curve.

// fusedMoEEpilogueUs is the GPU time of the SiLU-and-mul and moe_sum
// kernels of the Triton grouped GEMM op o at features x, in microseconds;
// 0 for other ops (the CUTLASS MoE path fuses differently).
func (r Roofline) fusedMoEEpilogueUs(o *spec.Op, x []float64) float64 {
	if o.Name != spec.OpMoEGroupedGEMM || o.CutlassMoE || len(x) == 0 || x[0] <= 0 {
		return 0
	}
	tokens := batchTokens(o, x)
	rows := tokens * float64(max(o.TopK, 1))
	// The caches hold BF16 activations whatever the weights' type
	// (spec/opcatalog.go: ab).
	const actBytes = 2
	act := spec.Op{Name: spec.OpMLPAct, Family: spec.OpFamily(spec.OpMLPAct), Kernels: 1, Width: o.ExpertWidth, ElemBytes: actBytes}
	actUs := r.KernelMs(&act, []float64{rows}) * 1e3
	// moe_sum reads top-k rows of the hidden size per token and writes
	// one: a memory-bound element-wise kernel priced on the residual
	// add's curve (ClassAdd: vLLM's floor, FloorUs), the L2-resident part
	// of its bytes free as there; without the add's L2 roof (L2Gain),
	// which was fitted on PyTorch's add of Vidur's stack after the fused-MoE
	// terms were (curves.go).
	c := r.Device.Curves.Class[ClassAdd]
	sumBytes := actBytes * tokens * float64(o.K) * float64(max(o.TopK, 1)+1)
	sumUs := c.FloorUs + math.Max(sumBytes-c.L2ResidentMB*1e6, 0)/(r.Device.HBMGBps*1e9*c.MemEff)*1e6
	return actUs + sumUs
}
