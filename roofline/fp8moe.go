package roofline

import "github.com/ftk-dev/ftk/spec"

// Which kernel runs an FP8 (W8A8) GEMM in vLLM decides its efficiency,
// and vLLM picks it by op class and checkpoint format:
//   - dense linear layers: CUTLASS scaled_mm for per-tensor and
//     per-channel W8A8 (vllm/model_executor/layers/quantization/utils/
//     w8a8_utils.py, Fp8LinearOp, v0.8-v0.11), and CUTLASS's blockwise
//     kernel for block FP8 on Hopper (vLLM PR #23280, September 2025);
//     ftk prices them at FP8ComputeEff;
//   - MoE layers of "fp8", "fbgemm_fp8" and "modelopt" checkpoints:
//     Fp8MoEMethod (vllm/model_executor/layers/quantization/fp8.py,
//     v0.8-v0.11) runs the fused-MoE Triton kernel (fused_experts with
//     use_fp8_w8a8), unless the checkpoint is block-quantized and
//     VLLM_USE_DEEP_GEMM=1 selects DeepGEMM, or FlashInfer's CUTLASS MoE
//     is asked for; ftk prices the default, Triton, at FP8TritonMoEEff;
//   - MoE layers of "compressed-tensors" FP8 W8A8 checkpoints:
//     CompressedTensorsW8A8Fp8MoEMethod
//     (vllm/model_executor/layers/quantization/compressed_tensors/
//     compressed_tensors_moe.py, v0.9-v0.11) runs CUTLASS's grouped GEMM
//     (cutlass_moe_fp8) for per-channel weights and per-token dynamic
//     activations on Hopper; ftk prices it at FP8ComputeEff (a stated
//     approximation: no CUTLASS MoE kernel times are cited).

// fp8Roof is the roof (fraction of the FP8 peak) of FP8 op o.
func (c *Curves) fp8Roof(o *spec.Op) float64 {
	if o.Name == spec.OpMoEGroupedGEMM && !o.CutlassMoE && c.FP8TritonMoEEff > 0 {
		return c.FP8TritonMoEEff
	}
	return c.FP8ComputeEff
}
