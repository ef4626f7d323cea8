package roofline

import "github.com/ftk-dev/ftk/spec"

// Qwen3's Q/K norms: vLLM's Qwen3Attention splits the QKV projection's
// output into q, k and v, views q as [tokens, heads, head_dim] and runs
// its RMSNorm over each head (vllm/model_executor/models/qwen3.py,
// q_norm/k_norm), then the same for k. The profiles (Frontier's) time both
// norms with the projection (OpAttnPreProj with three kernels). The q and
// k slices of the projection's output are strided once there are two
// tokens or more, and the norm's input is made contiguous first: one copy
// kernel each. On the H800 Qwen3-30B-A3B-tiny KERNEL_ONLY rows the
// operator steps from 9.1 to 14.0-14.5 us between 1 and 2 tokens at every
// shape (TP8 and TP1), about two copy kernels' floors; the steps after it
// are gradual.
//
// They are priced by their own classes rather than as GEMM floors: each
// norm as the norm class's kernel over tokens x heads rows of head_dim
// (vLLM's rms_norm kernel takes the rows of the flattened input), each
// copy as the copy class's kernel over the slice (read and written once).
//
// Over head rows the norm is slow for its bytes: one thread block of 128
// threads per 128-element row (vLLM csrc/layernorm_kernels.cu,
// block(min(hidden_size, 1024))), each a dependent load, block reduction
// and scaling pass, so the rows' count, not their bytes, sets the time
// (Curve.RowUs). On the A800 kernel-traced rows (Frontier's linear-op
// profiler, frontier/profiling/linear_op/linear_op_impl.py: the QKV GEMM,
// then vLLM's rms_norm over the q and k head views, in one timer) the
// operator less its GEMM (whose time the output projection of the same K
// fixes, gemmtiles.go) grows 2.1-2.3 ns per head row from 1,024 to 4,096
// tokens at TP2 and TP4 (q and k, norm and copy together), where the
// norm and copy classes gave 0.7. Public cross-checks of the kind:
// FlashInfer issue #2396 (January 2026, B200, Llama-4-Scout) times the
// per-head Q norm at 345 us against 60 us for the token-row norm of the
// same bytes, and Liger-Kernel PR #731 (A100, 2025) speeds head-row
// RMSNorm up 2-4x by normalising many rows per block.
//
// Compiled (Roofline.Compiled: vLLM's torch.compile, every mode but
// --enforce-eager) the norms are Inductor's Triton kernels generated from
// RMSNorm.forward_native, not the rms_norm custom op: they load the
// strided head slices of the projection's output directly, so the two
// copies are not run, and Inductor's combo kernels (on in vLLM since PR
// #26682, October 2025) run the q and k norms as one kernel: "After
// qkv_proj, we reduce from 5 kernels to 2 kernels: 1 for qk-norm and 1
// for qk-rope" (Qwen3-0.6B trace). vLLM issue #34391 (February 2026)
// times the compiled path as the same two kernels (triton_red_fused +
// triton_poi_fused). The rotary embedding stays a kernel of its own
// (OpAttnRope): vLLM's pass fusing it with the norms,
// enable_qk_norm_rope_fusion, is on at no optimization level (vLLM
// docs/design/fusions.md, "perf issues on H100", issue #34391).

// qkNorm reports whether o is a QKV projection with Q/K norms whose heads
// are known (LayerOps sets them).
func qkNorm(o *spec.Op) bool {
	return o.Name == spec.OpAttnPreProj && o.Kernels == 3 && o.HeadDim > 0 && o.QHeads > 0
}

// qkNormUs is the GPU time, in microseconds, of the Q/K norms of o and of
// the copies that make their inputs contiguous, at features x.
func (r Roofline) qkNormUs(o *spec.Op, x []float64) float64 {
	if len(x) == 0 || x[0] <= 0 {
		return 0
	}
	t := x[0]
	norm := spec.Op{Name: spec.OpInputLayernorm, Family: spec.FamilyLinear, Kernels: 1, Width: o.HeadDim, ElemBytes: o.ElemBytes}
	if r.Compiled {
		return r.KernelMs(&norm, []float64{t * float64(o.QHeads+o.KVHeads)}) * 1e3
	}
	var us float64
	for _, heads := range []int{o.QHeads, o.KVHeads} {
		if heads <= 0 {
			continue
		}
		us += r.KernelMs(&norm, []float64{t * float64(heads)}) * 1e3
		if t >= 2 {
			cp := spec.Op{Name: spec.OpAttnInputReshape, Family: spec.FamilyAttention, Kernels: 1, QHeads: heads, HeadDim: o.HeadDim, ElemBytes: o.ElemBytes}
			us += r.KernelMs(&cp, []float64{t}) * 1e3
		}
	}
	return us
}
