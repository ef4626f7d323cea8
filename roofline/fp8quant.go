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
// activation element (tokens x K) at the device's HBM bandwidth.
type FP8QuantPath struct {
	// Table is the measured table's vLLM version; Dtype and KernelSource
	// the rows' labels.
	Table, Dtype, KernelSource string
	// Path says which quantization and GEMM the collector ran.
	Path         string
	FloorUs      float64
	BytesPerElem float64
}

// fp8QuantPaths are the FP8 GEMM rows of AIConfigurator's vLLM databases
// whose quantization is priced. Fitted by weighted least squares (relative
// error) on H100 SXM rows, every fifth row (in file order) held out, with
// the GEMM priced by the device model (FP8ComputeEff 0.6 unchanged: freed,
// its fitted scale is 0.98-0.99 for the CUTLASS rows and 1.05-1.06 for
// the DeepGEMM ones of 0.14.0, 1.01-1.02 for the CUTLASS rows of 0.24.0,
// with and without the K loop's split, skinnygemm.go).
var fp8QuantPaths = []FP8QuantPath{
	// Collector at 5ef50c9 (vLLM 0.14.0, the H100 0.14.0 table): Fp8Config
	// activation_scheme "static", weight transposed by hand; per-tensor
	// static quantization + CUTLASS scaled_mm, in a CUDA graph. 33 bytes
	// per element is about the four element-wise passes of an unfused
	// x.float() * 1/scale, clamp, cast (27 bytes) at the 0.85 of HBM an
	// element-wise kernel reaches.
	{Table: "0.14.0", Dtype: "fp8", KernelSource: "vllm_default", Path: "static per-tensor quantization (unfused) + CUTLASS scaled_mm",
		FloorUs: 8.95, BytesPerElem: 33.29},
	// Same collector: Fp8Config activation_scheme "dynamic" with 128x128
	// weight blocks, VLLM_USE_DEEP_GEMM=1: per-token-group (1x128)
	// quantization with its scales' layout + DeepGEMM, in a CUDA graph.
	{Table: "0.14.0", Dtype: "fp8_block", KernelSource: "vllm_default", Path: "per-token-group 1x128 quantization + DeepGEMM block FP8",
		FloorUs: 22.38, BytesPerElem: 41.37},
	// Collector at d5bad97 (vLLM 0.24.0): activation_scheme "dynamic",
	// process_weights_after_loading called; dynamic per-tensor
	// quantization (amax pass + quantize pass) + CUTLASS, in a CUDA graph.
	{Table: "0.24.0", Dtype: "fp8", KernelSource: "CutlassFP8ScaledMMLinearKernel", Path: "dynamic per-tensor quantization + CUTLASS scaled_mm",
		FloorUs: 3.04, BytesPerElem: 9.81},
}

// LookupFP8QuantPath returns the quantization term of a kernel table's FP8
// GEMM rows of vLLM version, dtype and kernel source: the collector
// differs between versions, so a term holds only for the version it was
// read from. Rows without one (other versions; the block-FP8 rows of the
// 0.24.0 collector, timed eagerly without a CUDA graph, whose times carry
// 50-175 us of host work per call) are priced as the GEMM alone.
func LookupFP8QuantPath(version, dtype, source string) (FP8QuantPath, bool) {
	for _, p := range fp8QuantPaths {
		if p.Table == version && p.Dtype == dtype && p.KernelSource == source {
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
	return p.FloorUs + tokens*k*p.BytesPerElem/(r.Device.HBMGBps*1e3)
}
