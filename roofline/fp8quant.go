package roofline

// An FP8 (W8A8) linear layer runs two things on a BF16 activation: the
// activation's quantization to FP8 (a pass over the tokens x K input) and
// the FP8 GEMM. The device model prices the GEMM (FP8ComputeEff, curves.go);
// how the quantization runs depends on how vLLM is driven, so it is a term
// of its own, priced per kernel path by FP8QuantPath.
//
// AIConfigurator's vLLM GEMM collector (ai-dynamo/aiconfigurator,
// collector/vllm/collect_gemm.py) times RowParallelLinear.forward on a BF16
// input, six layers per CUDA-graph replay: its FP8 rows hold the
// activation quantization as well as the GEMM. Its maintainers say so for
// the dynamic rows (commit 293ca13, "the collected fp8 row already runs
// the dynamic-quantization path ... so it carries the compute-scale
// overhead"). The layer is called outside vLLM's model runner (a bare
// VllmConfig, no torch.compile), and the quantization it pays per
// activation element is several times the one-pass kernel's 3 bytes (read
// BF16, write FP8): an unfused path, which a served vLLM does not run (it
// compiles the model, fusing the quantization, or, with --enforce-eager,
// calls the CUDA quantization kernel). So the simulator prices the GEMM
// alone, and these terms say what the collector's rows add to it; the
// paths below are read from the collector's source at the commit that
// produced each table, and the floor and bytes are fitted (fp8quant_test.go
// in cost refits them) with the GEMM term held at the device model's.

// FP8QuantPath is the activation quantization around one FP8 GEMM as a
// kernel table measured it: FloorUs per layer call (the quantization's
// kernels' launch floors inside the replayed graph) plus BytesPerElem per
// activation element (tokens x K) at the device's HBM bandwidth; and, for
// rows timed eagerly (no CUDA graph), the host time of one layer call.
type FP8QuantPath struct {
	// Table is the measured table's vLLM version; Dtype and KernelSource
	// the rows' labels; Device the device (spec.Device.Name) whose rows
	// the path holds for, empty for every device.
	Table, Dtype, KernelSource, Device string
	// Path says which quantization and GEMM the collector ran.
	Path         string
	FloorUs      float64
	BytesPerElem float64
	// TokenUs is the time a token row adds on its own: vLLM's dynamic
	// per-tensor quantization (csrc/quantization/fp8/common.cu,
	// dynamic_scaled_fp8_quant) reduces the absolute maximum with one
	// thread block per token, each block updating the one scale with an
	// atomic max, so the blocks' atomics on one address serialize (about
	// 6 ns a token on H100: 32,768 tokens of K = 32 take 245 us where the
	// bytes take 1).
	TokenUs float64
	// HostUs is, for rows the collector timed eagerly, the host time of
	// one layer call (Python dispatch and the launches of the
	// quantization's and the GEMM's kernels): the collector launches six
	// calls back to back between two CUDA events, so a row takes the
	// slower of the host's call and the GPU's kernels (EagerRowUs). 0: the
	// rows replay a CUDA graph, no host time.
	HostUs float64
	// UnalignedHostUs is the host time a call of M not a multiple of 4
	// adds (every such row of the 0.24.0 DeepGEMM tables takes it; read in
	// the rows, cause not verified: DeepGEMM reads the activation's scales
	// as a TMA-aligned tensor of M padded to 4 rows, so a likely one is
	// the scales' copy into that layout).
	UnalignedHostUs float64
}

// fp8QuantPaths are the FP8 GEMM rows of AIConfigurator's vLLM databases
// whose quantization is priced. The graphed paths are fitted by weighted
// least squares (relative error) on H100 SXM rows, every fifth row (in
// file order) held out, with the GEMM priced by the device model
// (FP8ComputeEff 0.6 unchanged: freed, its fitted scale is 0.98-0.99 for
// the CUTLASS rows and 1.05-1.06 for the DeepGEMM ones of 0.14.0, with
// and without the K loop's split, skinnygemm.go), except vLLM 0.24.0's
// CUTLASS per-tensor rows, whose GEMM is the CUTLASS model's
// (cutlassfp8.go); the eager ones by Nelder-Mead on the same
// relative error (cost/fp8quant_test.go refits both).
var fp8QuantPaths = []FP8QuantPath{
	// Collector at 5ef50c9 (vLLM 0.14.0, the H100 0.14.0 table): Fp8Config
	// activation_scheme "static", weight transposed by hand; per-tensor
	// static quantization + CUTLASS scaled_mm, in a CUDA graph. 33 bytes
	// per element is about the four element-wise passes of an unfused
	// x.float() * 1/scale, clamp, cast (27 bytes) at the 0.85 of HBM an
	// element-wise kernel reaches.
	{Table: "0.14.0", Dtype: "fp8", KernelSource: "vllm_default", Device: "h100", Path: "static per-tensor quantization (unfused) + CUTLASS scaled_mm",
		FloorUs: 8.95, BytesPerElem: 33.29},
	// Same collector: Fp8Config activation_scheme "dynamic" with 128x128
	// weight blocks, VLLM_USE_DEEP_GEMM=1: per-token-group (1x128)
	// quantization with its scales' layout + DeepGEMM, in a CUDA graph.
	{Table: "0.14.0", Dtype: "fp8_block", KernelSource: "vllm_default", Device: "h100", Path: "per-token-group 1x128 quantization + DeepGEMM block FP8",
		FloorUs: 22.38, BytesPerElem: 41.37},
	// Collector at d5bad97 (vLLM 0.24.0): activation_scheme "dynamic",
	// process_weights_after_loading called; dynamic per-tensor
	// quantization (amax pass with one atomic a token + quantize pass) +
	// CUTLASS, in a CUDA graph. The GEMM is priced by the CUTLASS model
	// (cutlassfp8.go), fitted with this term per device
	// (cost/cutlassfp8_test.go): B200's own; H100's, applied to every
	// other device's rows of this source.
	{Table: "0.24.0", Dtype: "fp8", KernelSource: "CutlassFP8ScaledMMLinearKernel", Device: "b200", Path: "dynamic per-tensor quantization + CUTLASS scaled_mm",
		FloorUs: 3.38, BytesPerElem: 12.49, TokenUs: 0.00415},
	{Table: "0.24.0", Dtype: "fp8", KernelSource: "CutlassFP8ScaledMMLinearKernel", Path: "dynamic per-tensor quantization + CUTLASS scaled_mm",
		FloorUs: 2.313, BytesPerElem: 4.452, TokenUs: 0.00621},
	// Same collector, fp8_block: Fp8Config activation_scheme "dynamic",
	// 128x128 weight blocks, one layer called eagerly six times
	// (benchmark_with_power with use_cuda_graph=False, latency / 1 layer):
	// per-token-group (1x128) quantization + the kernel vLLM 0.24.0
	// dispatches (fp8linear.go). The host call sets the small rows (85-93
	// us on H100 DeepGEMM, 175-233 on B200, 175-185 for CUTLASS's block
	// kernel); the GPU's kernels the large ones. The CUTLASS block rows'
	// floor (156-161 us) is not a launch floor: their large rows do not
	// separate the quantization from the block kernel's own time (2.9
	// times the device model's FP8 GEMM when that is scaled instead), so
	// the fitted floor holds both.
	{Table: "0.24.0", Dtype: "fp8_block", KernelSource: "DeepGemmFp8BlockScaledMMKernel", Device: "h100", Path: "eager: per-token-group 1x128 quantization + DeepGEMM",
		FloorUs: 5.44, BytesPerElem: 5.98, HostUs: 88.0, UnalignedHostUs: 8.63},
	{Table: "0.24.0", Dtype: "fp8_block", KernelSource: "FlashInferFp8BlockScaledMMKernel", Device: "h100", Path: "eager: per-token-group 1x128 quantization + FlashInfer block FP8 (M < 32)",
		FloorUs: 11.38, BytesPerElem: 88.49, HostUs: 60.87},
	{Table: "0.24.0", Dtype: "fp8_block", KernelSource: "CutlassFp8BlockScaledMMKernel", Device: "h100", Path: "eager: per-token-group 1x128 quantization + CUTLASS block-scaled GEMM (N not a multiple of 64 or K of 128)",
		FloorUs: 156.51, BytesPerElem: 2.48, HostUs: 181.37},
	{Table: "0.24.0", Dtype: "fp8_block", KernelSource: "DeepGemmFp8BlockScaledMMKernel", Device: "b200", Path: "eager: per-token-group 1x128 quantization + DeepGEMM",
		FloorUs: 0, BytesPerElem: 4.80, HostUs: 181.98, UnalignedHostUs: 50.95},
	{Table: "0.24.0", Dtype: "fp8_block", KernelSource: "CutlassFp8BlockScaledMMKernel", Device: "b200", Path: "eager: per-token-group 1x128 quantization + CUTLASS block-scaled GEMM (N not a multiple of 64 or K of 128)",
		FloorUs: 161.35, BytesPerElem: 2.43, HostUs: 165.10},
}

// LookupFP8QuantPath returns the quantization term of a kernel table's FP8
// GEMM rows of vLLM version, dtype and kernel source measured on device
// (spec.Device.Name): the collector differs between versions, so a term
// holds only for the version it was read from, and an eager row's host
// time only for the machine that timed it. Rows without one (other
// versions, devices and kernels) are priced as the GEMM alone.
func LookupFP8QuantPath(version, dtype, source, device string) (FP8QuantPath, bool) {
	for _, p := range fp8QuantPaths {
		if p.Table == version && p.Dtype == dtype && p.KernelSource == source && (p.Device == "" || p.Device == device) {
			return p, true
		}
	}
	return FP8QuantPath{}, false
}

// FP8QuantPaths lists the priced quantization paths.
func FP8QuantPaths() []FP8QuantPath { return append([]FP8QuantPath(nil), fp8QuantPaths...) }

// QuantUs is the time of path p's activation quantization of tokens x k
// BF16 elements on the device, in microseconds.
func (r Roofline) QuantUs(p FP8QuantPath, tokens, k float64) float64 {
	return p.FloorUs + tokens*p.TokenUs + tokens*k*p.BytesPerElem/(r.Device.HBMGBps*1e3)
}

// RowUs is the time a kernel-table row of path p measures for a GEMM of
// gemmUs over tokens x k activations, in microseconds: the GEMM and the
// quantization, or, for a row timed eagerly, the slower of that and the
// host's call.
func (r Roofline) RowUs(p FP8QuantPath, gemmUs, tokens, k float64) float64 {
	gpu := gemmUs + r.QuantUs(p, tokens, k)
	if p.HostUs == 0 {
		return gpu
	}
	host := p.HostUs
	if int64(tokens)%4 != 0 {
		host += p.UnalignedHostUs
	}
	return max(host, gpu)
}
