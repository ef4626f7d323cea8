package roofline

import (
	"strconv"
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
	// vllm_triton_attn), AttentionFA3 (FlashAttention-3 as vLLM 0.24.0
	// runs it, vllm_flash_attn_fa3), AttentionFA4 (FlashAttention-4,
	// vllm_flash_attn_fa4); empty: the device's default (on Hopper FA3 as
	// vLLM 0.14.0 runs it, vllm_flash_attn).
	Attention string
	// MoE is the fused-MoE experts kernel per weight format
	// (MoEKernelTriton: moetriton.go; MoEFlashInferTRTLLM,
	// MoEFlashInferTRTLLMModular, MoEFlashInferCutlass: moeblackwell.go,
	// moecutlasshopper.go) and the Triton kernel's config era; empty: the
	// device's default, the MoE classes' curves.
	MoE MoEKernels
	// FP8Linear is how vLLM dispatches W8A8 FP8 linear layers
	// (FP8Dispatch024; FP8LinearKernel names the kernel a layer runs);
	// empty: not given.
	FP8Linear string
}

// KernelFLinear is vLLM's unquantized GEMM, torch.nn.functional.linear
// (cuBLAS), as AIConfigurator's vLLM 0.24.0 gemm table names it (its
// vLLM 0.14.0 table names every row vllm_default).
const KernelFLinear = "torch.nn.functional.linear"

// The attention kernels Kernels.Attention names.
const (
	AttentionTRTLLM = "trtllm"
	AttentionTriton = "triton"
	AttentionFA3    = "fa3"
	AttentionFA4    = "fa4"
	AttentionFA2    = "fa2"
)

// AttentionKernel returns the attention kernel family an AIConfigurator
// kernel_source names ("" for others: the device's default).
func AttentionKernel(kernelSource string) string {
	switch {
	case strings.HasPrefix(kernelSource, "vllm_flashinfer_trtllm"):
		return AttentionTRTLLM
	case kernelSource == "vllm_triton_attn":
		return AttentionTriton
	case kernelSource == "vllm_flash_attn_fa3":
		return AttentionFA3
	case kernelSource == "vllm_flash_attn_fa4":
		return AttentionFA4
	}
	return ""
}

// MoEKernels names the fused-MoE experts kernel vLLM runs per weight
// format, by the backend part of the tables' kernel sources
// (vllm_<method>_<backend>_<experts>: MoEKernelOfSource on Hopper,
// MoEKernel on Blackwell); empty: the device model's default, the MoE
// classes' curves. FP8 is per-tensor FP8 with static activation scales
// (spec.Op.FP8StaticScales), FP8Dynamic with scales computed per batch,
// FP8BlockEP block FP8 under expert parallelism.
type MoEKernels struct {
	BF16, FP8, FP8Dynamic, FP8Block, FP8BlockEP string
	// ConfigsBefore is the date (YYYY-MM-DD) before which a tuned Triton
	// config file on vLLM's main counts (moeconfig.go); "": the v0.10-v0.16
	// era's (vllmEraFilesBefore). ScaledDefault says the untuned default
	// config scales its tiles with the batch (vLLM PR #34846, v0.17.0 on).
	ConfigsBefore string
	ScaledDefault bool
	// BF16From024 selects the BF16 Triton terms fitted on the vLLM 0.24.0
	// kernel era's rows (TritonMoESet.BF16From024) over the 0.14.0 ones.
	BF16From024 bool
}

// With returns m with kernel for every weight format (the config era
// kept): the kernel a table row names, or a device whose vLLM runs one
// kernel for every format (Blackwell).
func (m MoEKernels) With(kernel string) MoEKernels {
	m.BF16, m.FP8, m.FP8Dynamic, m.FP8Block, m.FP8BlockEP = kernel, kernel, kernel, kernel, kernel
	return m
}

// The fused-MoE experts kernels ftk prices.
const (
	// MoEKernelTriton is vLLM's fused_moe_kernel (fused_experts,
	// TritonExperts; moetriton.go). The vLLM 0.14.0 tables' kernel source
	// vllm_fused_moe is this kernel.
	MoEKernelTriton = "triton"
)

// MoEKernelOfSource is the experts kernel a moe table's kernel source
// names ("" for one ftk does not price).
func MoEKernelOfSource(source string) string {
	switch {
	case source == "vllm_fused_moe" || strings.HasSuffix(source, "_triton_tritonexperts"):
		return MoEKernelTriton
	case strings.Contains(source, "_flashinfer_cutlass_"):
		return MoEFlashInferCutlass
	}
	return ""
}

// KernelsFor returns the kernels vLLM version vllmVersion ("" : not
// given) picks on a device of architecture arch (spec.Device.Arch). Each
// rule cites the vLLM source that makes the choice.
//   - BF16GEMM: vLLM's UnquantizedLinearMethod.apply calls the GEMM that
//     dispatch_unquantized_gemm returns (vllm/model_executor/layers/
//     utils.py), on CUDA torch.nn.functional.linear, which PyTorch runs
//     with cuBLAS; priced by the cuBLAS model on Hopper (terms fitted on
//     vLLM 0.14.0's rows, held out on 0.24.0's), on Blackwell of compute
//     capability 10.0 (its own terms, fitted on vLLM 0.24.0's B200 rows)
//     and on Ampere (its own terms, fitted on vLLM 0.14.0's A100 rows:
//     cublas.go). Without a
//     version, the GEMM class's curve (fitted on the profiles of older
//     stacks, curves.go) prices it.
//   - FP8Linear: vLLM 0.24's dispatch (fp8linear.go) on Hopper and
//     Blackwell, read from the 0.24.0 tables and vLLM's selection code;
//     other versions are not given.
//
// Fused MoE on Hopper, from vLLM 0.14.0 (the oldest release ftk has
// kernel tables of; older releases and no version keep the MoE classes'
// curves, fitted on vLLM 0.10-era profiles):
//   - v0.14-v0.23: the Triton kernel for every weight format, the tuned
//     files of the v0.10-v0.16 era (no H100 file was added between
//     v0.14.0 and v0.16.0: spec/devices/h100.yaml) and, from v0.17.0, the
//     batch-scaled default config (vLLM PR #34846). That vLLM 0.14.0
//     serves FP8 MoE with Triton is not read in its source: its table
//     times fused_experts directly (AIConfigurator's collect_moe.py), a
//     stated assumption.
//   - v0.24.0 on: the FP8 backend oracle (vllm/model_executor/layers/
//     fused_moe/oracle/fp8.py, _get_priority_backends, read at commit
//     001a058b) ranks FlashInfer's TRT-LLM kernels (Blackwell only), then
//     FlashInfer CUTLASS, first; on Hopper it moves Triton to the front for
//     block FP8 without expert parallelism and FlashInfer CUTLASS with it.
//     So per-tensor FP8 and block FP8 under EP run FlashInfer CUTLASS,
//     block FP8 under TP and BF16 Triton: AIConfigurator's vLLM 0.24.0 H100
//     moe table, which builds the FusedMoE module and lets vLLM pick,
//     records exactly these kernel sources. FlashInfer CUTLASS takes
//     per-tensor FP8 only with static activation scales (FlashInferExperts'
//     _supports_quant_scheme, fused_moe/experts/flashinfer_cutlass_moe.py),
//     as ModelOpt checkpoints (the table's rows: collect_moe.py builds
//     ModelOptFp8Config) and fp8 checkpoints of activation_scheme static
//     carry; with dynamic scales (Fp8Config's default) the oracle's next
//     backends are DeepGEMM (block FP8 only) and, since Fp8MoEMethod does
//     not allow vLLM's CUTLASS (allow_vllm_cutlass=False), Triton. Tuned files on vLLM's main
//     before 2026-07-13 count (the date of AIConfigurator's commit d5bad971c
//     that collected 0.24.0: an upper bound on its release).
func KernelsFor(arch, vllmVersion string) Kernels {
	var k Kernels
	if vllmVersion != "" && (arch == spec.ArchHopper || arch == spec.ArchBlackwell || arch == spec.ArchAmpere) {
		k.BF16GEMM = KernelFLinear
	}
	if arch == spec.ArchBlackwell && vllmVersion != "" && !versionBefore(vllmVersion, "0.24.0") {
		// MoE: vLLM's oracles put FlashInfer TRT-LLM first on CUDA
		// devices other than Hopper (fused_moe/oracle/unquantized.py and
		// oracle/fp8.py, _get_priority_backends, read on vLLM's main
		// branch), its monolithic experts first (backend_to_kernel_cls),
		// as AIConfigurator's vLLM 0.24.0 B200 rows record for most
		// shapes (the rest ran FlashInfer CUTLASS). Earlier versions are
		// not read: the default. TRT-LLM-gen runs on SM100 (B200) only; an
		// SM120 part (RTX PRO 6000) shares the architecture name and is
		// priced as B200's kernels under this rule (a stated gap).
		k.MoE = k.MoE.With(MoEFlashInferTRTLLM)
	}
	if arch == spec.ArchHopper && vllmVersion != "" && !versionBefore(vllmVersion, "0.24.0") {
		// Attention: FLASH_ATTN on Hopper runs vllm-flash-attn's FA3
		// (vllm/platforms/cuda.py, vllm/v1/attention/backends/
		// flash_attn.py); the tables hold it at 0.14.0 and 0.24.0, and a
		// version is priced as the newest measured one at or below it
		// (below 0.24.0: 0.14.0's, the default). FA4 runs on Hopper in
		// 0.24.0 only for head dims FA3 lacks (over 256; 512: the tables'
		// FA4 rows), which no catalog model has: Roofline.fa4 prices such
		// a layer with FA4's terms (fa4.go) under this same field.
		k.Attention = AttentionFA3
	}
	if arch == spec.ArchAmpere && vllmVersion != "" {
		// Attention: FLASH_ATTN, vLLM's first backend on compute
		// capability 8.x (vllm/platforms/cuda.py, the backend priorities),
		// runs vllm-flash-attn's FA2 there: get_flash_attn_version
		// (vllm/v1/attention/backends/fa_utils.py) gives FA3 only on
		// sm_90. Priced by the terms fitted on vLLM 0.14.0's A100 rows
		// (fa2.go) at every version: the A100 tables of 0.22.0 reuse
		// 0.14.0's (reuse.yaml), and no other version was measured.
		k.Attention = AttentionFA2
	}
	if strings.HasPrefix(vllmVersion, "0.24.") && (arch == spec.ArchHopper || arch == spec.ArchBlackwell) {
		k.FP8Linear = FP8Dispatch024
	}
	if arch != spec.ArchHopper || vllmVersion == "" || versionBefore(vllmVersion, "0.14.0") {
		return k
	}
	k.MoE = MoEKernels{}.With(MoEKernelTriton)
	if !versionBefore(vllmVersion, "0.17.0") {
		k.MoE.ScaledDefault = true
		k.MoE.ConfigsBefore = "2026-03-07" // v0.17.0's release
	}
	if !versionBefore(vllmVersion, "0.24.0") {
		k.MoE.FP8, k.MoE.FP8BlockEP = MoEFlashInferCutlass, MoEFlashInferCutlass // FP8Dynamic: Triton
		k.MoE.ConfigsBefore = "2026-07-13"
		k.MoE.BF16From024 = true
	}
	return k
}

// versionBefore says whether dotted version a is older than b, comparing
// numeric components (0.9.0 < 0.14.0); a component that is not a number
// compares as 0.
func versionBefore(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
