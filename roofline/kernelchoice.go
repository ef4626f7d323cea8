package roofline

import (
	"fmt"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Kernels names the kernel vLLM runs for each op family whose price
// depends on which kernel it picks (by vLLM version, device and dtype), as
// AIConfigurator's kernel tables name it in their kernel_source column
// (for example "DeepGemmFp8BlockScaledMMKernel"). An empty field is the
// device model's default for the device: what ftk prices when the vLLM
// version is not given.
//
// The kernel-table scorer (cost.RooflineVsTable) sets a field from each
// row's kernel source, so a row is priced as the kernel that ran it; the
// simulator sets the fields from --vllm-version through KernelsFor, so a
// served step is priced as the kernels that version picks.
type Kernels struct {
	// BF16GEMM is the kernel of unquantized (BF16, FP16) linear layers:
	// KernelFLinear, priced as cuBLAS runs it (cublas.go) where the
	// device's curves have the terms; empty: the GEMM class's curve.
	BF16GEMM string
	// Attention is the attention kernel family: AttentionTRTLLM
	// (FlashInfer's TRT-LLM kernels, vllm_flashinfer_trtllm*),
	// AttentionTriton (vLLM's Triton unified attention,
	// vllm_triton_attn); empty: the device's default.
	Attention string
	// MoE is the fused-MoE kernel (moeblackwell.go: MoEFlashInferTRTLLM,
	// MoEFlashInferTRTLLMModular, MoEFlashInferCutlass); empty: the
	// device's default, vLLM's Triton fused_moe.
	MoE string
}

// KernelFLinear is vLLM's unquantized GEMM, torch.nn.functional.linear
// (cuBLAS), as AIConfigurator's vLLM 0.24.0 gemm table names it (its
// vLLM 0.14.0 table names every row vllm_default).
const KernelFLinear = "torch.nn.functional.linear"

// The attention kernels Kernels.Attention names.
const (
	AttentionTRTLLM = "trtllm"
	AttentionTriton = "triton"
)

// AttentionKernel returns the attention kernel family an AIConfigurator
// kernel_source names ("" for others: the device's default).
func AttentionKernel(kernelSource string) string {
	switch {
	case strings.HasPrefix(kernelSource, "vllm_flashinfer_trtllm"):
		return AttentionTRTLLM
	case kernelSource == "vllm_triton_attn":
		return AttentionTriton
	}
	return ""
}

// KernelsFor returns the kernels vLLM version vllmVersion ("" : not
// given) picks on a device of architecture arch (spec.Device.Arch). Each
// rule cites the vLLM source that makes the choice.
//   - BF16GEMM: vLLM's UnquantizedLinearMethod.apply calls the GEMM that
//     dispatch_unquantized_gemm returns (vllm/model_executor/layers/
//     utils.py), on CUDA torch.nn.functional.linear, which PyTorch runs
//     with cuBLAS; priced by the cuBLAS model on Hopper, whose terms are
//     fitted on vLLM 0.14.0's rows and held out on 0.24.0's. Without a
//     version, the GEMM class's curve (fitted on the profiles of older
//     stacks, curves.go) prices it.
func KernelsFor(arch, vllmVersion string) Kernels {
	var k Kernels
	if vllmVersion != "" && arch == spec.ArchHopper {
		k.BF16GEMM = KernelFLinear
	}
	if arch == spec.ArchBlackwell && versionAtLeast(vllmVersion, 0, 24) {
		// MoE: vLLM's oracles put FlashInfer TRT-LLM first on CUDA
		// devices other than Hopper (fused_moe/oracle/unquantized.py and
		// oracle/fp8.py, _get_priority_backends, read on vLLM's main
		// branch), its monolithic experts first (backend_to_kernel_cls),
		// as AIConfigurator's vLLM 0.24.0 B200 rows record for most
		// shapes (the rest ran FlashInfer CUTLASS). Earlier versions are
		// not read: the default. TRT-LLM-gen runs on SM100 (B200) only; an
		// SM120 part (RTX PRO 6000) shares the architecture name and is
		// priced as B200's kernels under this rule (a stated gap).
		k.MoE = MoEFlashInferTRTLLM
	}
	return k
}

// versionAtLeast says vLLM version v ("0.24.0", "0.24.1rc1") is at least
// major.minor; false for "" and for versions it cannot read.
func versionAtLeast(v string, major, minor int) bool {
	var a, b int
	if _, err := fmt.Sscanf(v, "%d.%d", &a, &b); err != nil {
		return false
	}
	return a > major || a == major && b >= minor
}
