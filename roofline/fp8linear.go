package roofline

import "github.com/ftk-dev/ftk/spec"

// The kernels vLLM dispatches W8A8 FP8 linear layers to, as
// AIConfigurator's vLLM 0.24.0 gemm tables name them (kernel_source).
const (
	KernelCutlassFP8          = "CutlassFP8ScaledMMLinearKernel"
	KernelCutlassFP8Block     = "CutlassFp8BlockScaledMMKernel"
	KernelDeepGemmFP8Block    = "DeepGemmFp8BlockScaledMMKernel"
	KernelFlashInferFP8Block  = "FlashInferFp8BlockScaledMMKernel"
	deepGemmMinTokensOnHopper = 32
)

// FP8Dispatch024 is Kernels.FP8Linear's value for vLLM 0.24.0's dispatch
// of FP8 linear layers (FP8LinearKernel).
const FP8Dispatch024 = "vllm-0.24"

// FP8LinearKernel returns the kernel dispatch (Kernels.FP8Linear) runs an
// FP8 linear layer of tokens x k times k x n with, on a device of
// architecture arch; block says the weights are quantized in 128 x 128
// blocks (activations per token in groups of 128). "" when dispatch is
// empty (the device model's default, which prices every FP8 GEMM alike).
//
// vLLM 0.24.0 (FP8Dispatch024), each rule matching every fp8 and
// fp8_block row of AIConfigurator's H100 SXM and B200 SXM tables
// (TestFP8LinearKernelMatchesTables):
//   - per-tensor scales: CUTLASS scaled_mm (vllm/model_executor/kernels/
//     linear, _POSSIBLE_FP8_KERNELS: FlashInfer's per-tensor kernel is
//     listed first but the tables record CUTLASS on both GPUs);
//   - block scales: DeepGEMM where N is a multiple of 64 and K of 128
//     (vllm/utils/deep_gemm.py, should_use_deepgemm_for_fp8_linear, as
//     AIConfigurator's collector at d5bad971c cites it), else CUTLASS's
//     block-scaled kernel; on Hopper the DeepGEMM layers run FlashInfer's
//     swap-AB kernel below 32 tokens (FlashInferFp8DeepGEMMDynamic-
//     BlockScaledKernel: DeepGEMM for m >= 32, vllm/model_executor/
//     kernels/linear/scaled_mm/flashinfer.py, as the collector cites it);
//     on Blackwell DeepGEMM runs every token count.
//
// The GEMM's price does not depend on the kernel: the device model's FP8
// roof prices the DeepGEMM and FlashInfer rows within 5-8% held out
// (fp8quant.go); CUTLASS's block kernel is slower on large shapes but
// runs only shapes a served model's layers rarely have.
func FP8LinearKernel(dispatch, arch string, block bool, tokens, n, k int) string {
	if dispatch != FP8Dispatch024 {
		return ""
	}
	if !block {
		return KernelCutlassFP8
	}
	if n%64 != 0 || k%128 != 0 {
		return KernelCutlassFP8Block
	}
	if arch == spec.ArchHopper && tokens < deepGemmMinTokensOnHopper {
		return KernelFlashInferFP8Block
	}
	return KernelDeepGemmFP8Block
}

// FP8ActQuant is vLLM's standalone FP8 activation quantization, run before
// an FP8 linear layer whose input no fused kernel quantizes: FloorUs a
// call inside a CUDA graph, TokenUs a token (scaled_fp8_quant launches one
// thread block a token, csrc/quantization/fp8/common.cu) and BytesPerElem
// an activation element (tokens x K) at the device's HBM bandwidth (the
// kernel reads BF16 and writes FP8: 3 bytes; rows small enough to stay in
// the L2 run faster, rows larger slower, so the fitted bytes are a mean).
type FP8ActQuant struct{ FloorUs, TokenUs, BytesPerElem float64 }

// fp8ActQuants are fitted by least squares of the relative error on
// AIConfigurator's vLLM 0.24.0 quantize tables (scale_matrix_perf:
// static_scaled_fp8_quant of M x K, several calls in one CUDA graph,
// collector/vllm/collect_computescale.py at d5bad971c), every fifth row
// held out (cost/fp8linear_test.go, TestFP8ActQuantRefit, states the
// held-out error). Ada and Ampere have none (Ampere runs no FP8; Ada's
// table was not read).
var fp8ActQuants = map[string]FP8ActQuant{
	spec.ArchHopper:    {FloorUs: 2.08, TokenUs: 0.000237, BytesPerElem: 2.24},
	spec.ArchBlackwell: {FloorUs: 2.20, TokenUs: 0.000400, BytesPerElem: 3.05},
}

// FP8ActQuantOf returns the activation quantization terms of devices of
// architecture arch.
func FP8ActQuantOf(arch string) (FP8ActQuant, bool) {
	q, ok := fp8ActQuants[arch]
	return q, ok
}

// Us is the time of quantizing tokens x k activations on device d.
func (q FP8ActQuant) Us(d *Device, tokens, k float64) float64 {
	return q.FloorUs + tokens*q.TokenUs + tokens*k*q.BytesPerElem/(d.HBMGBps*1e3)
}

// servedActQuantUs is the activation quantization a served step runs with
// FP8 op o over tokens, when the vLLM version is given (Kernels.FP8Linear):
// the attention output's, before the output projection. vLLM fuses
// attention with the quantization after it only when asked
// (PassConfig.fuse_attn_quant, "Off by default": vLLM's design docs,
// "Fusion torch.compile passes"), so in a served step it is its own
// kernel. The quantization of the other layers' inputs is priced as
// fused into the RMSNorm and SiLU-and-mul before them (vLLM's -O2 default
// enables fuse_norm_quant and fuse_act_quant where it can,
// OPTIMIZATION_LEVEL_02 in vllm/config/vllm.py; where it does not,
// Inductor generates the quantization with the norm's or activation's own
// kernel: an assumption, not measured). Block-FP8 layers quantize per
// token group of 128 (per_token_group_quant_fp8), priced as the
// per-tensor kernel of the same bytes (a stated approximation: the
// quantize tables time only per-tensor and per-token kernels).
func (r Roofline) servedActQuantUs(o *spec.Op, x []float64) float64 {
	if r.Kernels.FP8Linear == "" || !o.FP8 || o.Name != spec.OpAttnPostProj || len(x) == 0 {
		return 0
	}
	q, ok := FP8ActQuantOf(r.Device.Arch)
	if !ok {
		return 0
	}
	return q.Us(r.Device, x[0], float64(o.K))
}
