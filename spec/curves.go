package spec

// Device generations: each has one table of kernel-class curves.
const (
	ArchHopper    = "hopper"
	ArchAmpere    = "ampere"
	ArchAda       = "ada"
	ArchBlackwell = "blackwell"
)

// archCurves returns the curves of a generation. Hopper and Ampere are
// fitted to real profiles; Ada and Blackwell have no profile in
// ../shared and borrow the nearest fitted generation (a stated
// approximation: their peaks and bandwidths are their own, only the
// efficiencies and floors are borrowed).
func archCurves(arch string) Curves {
	switch arch {
	case ArchAmpere, ArchAda:
		return ampereCurves
	}
	return hopperCurves
}

// hopperCurves: fitted (BenchmarkCalibrateCurves reproduces the fit) on
// the calibration rows (every row but each file's every fifth) of
//   - vidur-h100/Llama-2-7b-hf/mlp.csv: Vidur's H100 profile of
//     Llama-2-7B, TP1-8, 1-4096 tokens (GPU kernel times);
//   - frontier-h800/*/*_kernel_only.csv: Frontier's H800 KERNEL_ONLY
//     profiles (Llama-2-7B, Qwen3-30B-A3B-tiny, Phi-tiny-MoE; vLLM
//     kernels, FlashInfer attention);
//   - frontier-h800/*/<family>.csv: the same shapes timed with CUDA events
//     (host terms);
//   - vidur-h100/network-h100_dgx: NCCL all-reduce (TP2/4/8) and send/recv
//     (intra- and inter-node) on an H100 DGX.
//
// Public cross-checks: cuBLAS BF16 GEMMs reach 70-80% of the dense peak on
// large shapes (NVIDIA H100 whitepaper; "NVIDIA Hopper Architecture In-Depth",
// NVIDIA blog 2022), skinny decode GEMMs stream weights at 80-90% of HBM
// bandwidth; FP8 GEMMs reach 1,000-1,550 TFLOPS on H800 (DeepGEMM README,
// deepseek-ai/DeepGEMM, 2025), about 0.5-0.78 of the FP8 peak.
var hopperCurves = Curves{Class: [numKernelClasses]Curve{
	ClassGEMM:        {FloorUs: 3.38, MemEff: 0.883, ComputeEff: 0.77, HostPreUs: 16.8, HostUs: 25.4},
	ClassNorm:        {FloorUs: 2.56, MemEff: 0.456, HostPreUs: 9.8, HostUs: 16.4},
	ClassAct:         {FloorUs: 2.14, MemEff: 0.582, HostPreUs: 4.56, HostUs: 9.12},
	ClassRope:        {FloorUs: 2.25, MemEff: 0.541, HostPreUs: 10.1, HostUs: 21.4},
	ClassAdd:         {FloorUs: 2.65, MemEff: 0.92, HostPreUs: 14.8, HostUs: 33.2},
	ClassEmbedding:   {FloorUs: 2.74, MemEff: 0.191, HostPreUs: 9.88, HostUs: 15.8},
	ClassCopy:        {FloorUs: 2.2, MemEff: 0.92, HostPreUs: 10.7, HostUs: 9.85},
	ClassAttnPrefill: {FloorUs: 9.22, MemEff: 0.563, ComputeEff: 0.55, HalfFLOPs: 1.83e+06, HostPreUs: 42.9, HostUs: 40.1},
	ClassAttnDecode:  {FloorUs: 7.38, MemEff: 0.85, HostPreUs: 20.9, HostUs: 40.2},
	ClassMoERouting:  {FloorUs: 7.92, MemEff: 0.00444, HostPreUs: 68, HostUs: 13.5},
	ClassMoEShuffle:  {FloorUs: 3.93, MemEff: 0.39, HostPreUs: 25.4, HostUs: 25.3},
	ClassMoEGEMM:     {FloorUs: 2.06, MemEff: 0.92, ComputeEff: 0.0945, HostPreUs: 107, HostUs: 43.6},
	ClassAllReduce:   {FloorUs: 27.6, MemEff: 0.778},
	ClassSendRecv:    {FloorUs: 7.18, MemEff: 0.716},
	ClassAllToAll:    {FloorUs: 10, MemEff: 0.7},
}, Host: map[string]HostTerms{
	"add":                      {PreUs: 14.8, Us: 33.2},
	"attn_decode":              {PreUs: 20.9, Us: 40.2},
	"attn_input_reshape":       {PreUs: 10, Us: 11.2},
	"attn_kv_cache_save":       {PreUs: 20.5, Us: 9.4},
	"attn_output_reshape":      {PreUs: 10.1, Us: 8.31},
	"attn_post_proj":           {PreUs: 16.7, Us: 25.1},
	"attn_pre_proj":            {PreUs: 32.9, Us: 63.6},
	"attn_prefill":             {PreUs: 42.9, Us: 40.1},
	"attn_rope":                {PreUs: 10.1, Us: 21.4},
	"emb":                      {PreUs: 9.88, Us: 15.8},
	"input_layernorm":          {PreUs: 9.8, Us: 16.4},
	"mlp_act":                  {PreUs: 4.56, Us: 9.12},
	"mlp_down_proj":            {PreUs: 14.6, Us: 23.4},
	"mlp_up_proj":              {PreUs: 15.9, Us: 29.5},
	"moe_gating_linear":        {PreUs: 17.4, Us: 25.9},
	"moe_gating_routing_topk":  {PreUs: 68, Us: 13.5},
	"moe_grouped_gemm":         {PreUs: 107, Us: 43.6},
	"moe_shuffling":            {PreUs: 25.4, Us: 25.3},
	"post_attention_layernorm": {PreUs: 9.8, Us: 16.4},
}, ColdHostFactor: 1, FP8ComputeEff: 0.6,
	CustomAllReduce: Curve{FloorUs: 8, MemEff: 0.7}}

// ampereCurves: fitted on the calibration rows of
// frontier-a800-qwen3-30b-a3b (Frontier's A800 profile of the full
// Qwen3-30B-A3B, CUDA_EVENT, TP1-8, FlashInfer). There is no Ampere
// collective profile in ../shared: the collective terms are Hopper's
// (a stated approximation; bandwidths are the device's own).
var ampereCurves = Curves{Class: [numKernelClasses]Curve{
	ClassGEMM:        {FloorUs: 16, MemEff: 0.753, ComputeEff: 0.808, HostPreUs: 1, HostUs: 66},
	ClassNorm:        {FloorUs: 5.23, MemEff: 0.713, HostPreUs: 2.83, HostUs: 7.54},
	ClassAct:         {FloorUs: 1.43, MemEff: 0.833, HostPreUs: 15.5, HostUs: 39.8},
	ClassRope:        {FloorUs: 1.09, MemEff: 0.439, HostPreUs: 2.94, HostUs: 3.42},
	ClassAdd:         {FloorUs: 2.65, MemEff: 0.92, HostPreUs: 14.8, HostUs: 33.2},
	ClassEmbedding:   {FloorUs: 1.26, MemEff: 0.92, HostPreUs: 5.31, HostUs: 8},
	ClassCopy:        {FloorUs: 1.69, MemEff: 0.791, HostPreUs: 1.77, HostUs: 3.84},
	ClassAttnPrefill: {FloorUs: 6.98, MemEff: 0.919, ComputeEff: 0.303, HalfFLOPs: 1.07e+09, HostPreUs: 9.23, HostUs: 34.4},
	ClassAttnDecode:  {FloorUs: 15.1, MemEff: 0.92, HostPreUs: 1, HostUs: 1},
	ClassMoERouting:  {FloorUs: 7.92, MemEff: 0.00444, HostPreUs: 68, HostUs: 13.5},
	ClassMoEShuffle:  {FloorUs: 3.93, MemEff: 0.39, HostPreUs: 25.4, HostUs: 25.3},
	ClassMoEGEMM:     {FloorUs: 2.06, MemEff: 0.92, ComputeEff: 0.0945, HostPreUs: 107, HostUs: 43.6},
	ClassAllReduce:   {FloorUs: 27.6, MemEff: 0.778},
	ClassSendRecv:    {FloorUs: 7.18, MemEff: 0.716},
	ClassAllToAll:    {FloorUs: 10, MemEff: 0.7},
}, Host: map[string]HostTerms{
	"attn_decode":              {PreUs: 1, Us: 1},
	"attn_input_reshape":       {PreUs: 1.77, Us: 3.84},
	"attn_kv_cache_save":       {PreUs: 1.22, Us: 3.9},
	"attn_output_reshape":      {PreUs: 1.9, Us: 3.84},
	"attn_post_proj":           {PreUs: 1, Us: 8.93},
	"attn_pre_proj":            {PreUs: 1, Us: 40},
	"attn_prefill":             {PreUs: 9.23, Us: 34.4},
	"attn_rope":                {PreUs: 2.94, Us: 3.42},
	"emb":                      {PreUs: 5.31, Us: 8},
	"input_layernorm":          {PreUs: 2.46, Us: 7.92},
	"lm_head_linear":           {PreUs: 1, Us: 66},
	"mlp_act":                  {PreUs: 15.5, Us: 39.8},
	"mlp_down_proj":            {PreUs: 1.13, Us: 66.6},
	"mlp_up_proj":              {PreUs: 1, Us: 71.3},
	"post_attention_layernorm": {PreUs: 3.53, Us: 9.71},
}, ColdHostFactor: 3, FP8ComputeEff: 0,
	CustomAllReduce: Curve{FloorUs: 8, MemEff: 0.7}}
