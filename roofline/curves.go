package roofline

import "github.com/ftk-dev/ftk/spec"

// archCurves returns the curves of a generation. Hopper and Ampere are
// fitted to real profiles; Ada and Blackwell have no profile in
// testdata and borrow Hopper's (a stated approximation: their peaks and
// bandwidths are their own, only the efficiencies and floors are
// borrowed). Hopper's kernel terms are fitted on GPU kernel times
// (KERNEL_ONLY); Ampere's partly on CUDA_EVENT times (its norm,
// activation, embedding and LM-head shapes are timed eagerly only), so its
// floors are coarser (a GEMM floor of 10.6 us against Hopper's 3.4 us):
// on vLLM issue #45709's RTX 4090 D graphs the Ampere floors (then fitted
// on eager rows only) added 3.5 ms to a 48-layer decode step.
func archCurves(arch string) Curves {
	switch arch {
	case spec.ArchAmpere:
		return ampereCurves
	case spec.ArchAda:
		// vLLM PR #53710's L40S fused-MoE FP8 kernel times (tuned
		// config, Triton 3.6.0) land within 0-9% of the dense FP8 roof
		// (roofline_ada_test.go), not of Hopper's Triton one (fp8moe.go).
		// The old default tiles' per-SM MMA rate (DefaultTileSMTFLOPS,
		// moeconfig.go) is above what an Ada SM's tensor cores reach
		// (RTX 4090 D 1.29, L40S 2.55 TFLOPS an SM at the peak, 2.3 at
		// the roof), so they cost nothing here.
		c := hopperCurves
		c.FP8TritonMoEEff = 0
		// Ada's GEMMs keep the GEMM class's curve: the cuBLAS model with
		// Hopper's terms prices the L40S's vLLM 0.24.0 BF16 rows at 32.1%
		// MAPE against the curve's 34.8% (cublas.go), no gain worth it.
		c.CuBLAS = nil
		// FlashAttention-3 runs on sm_90 only: vLLM runs FA2 (or
		// FlashInfer) on Ada, priced by the attention classes' curves.
		c.FA3, c.FA4 = nil, nil
		// The KV-cache write's block term is fitted on H100 rows
		// (kvcachesave.go): Ada keeps the copy class's curve.
		c.KVCacheSave = nil
		// The fused_experts terms are fitted on H100 rows (moetriton.go),
		// and so are FlashInfer CUTLASS's (moecutlasshopper.go).
		c.TritonMoE, c.FlashInferMoE, c.CutlassFP8MoE = nil, nil, nil
		return c
	case spec.ArchBlackwell:
		// No old-default fused-MoE time on a Blackwell GPU was read (vLLM
		// PR #31448's B200 log has one; only its 1-8-token rows, in the
		// small-batch branch, were seen), and the one Blackwell MoE run
		// ftk replays (LLMServingSim's RTX PRO 6000, docs/validation.md) is vLLM
		// 0.19.0, after PR #34846: not applied, a stated gap (a B200 SM
		// reaches 15 TFLOPS, six times the old tiles' per-SM rate).
		c := hopperCurves
		c.Class[ClassMoEGEMM].DefaultTileSMTFLOPS = 0
		c.CustomAllReduce = blackwellCustomAllReduce // customar.go
		// vLLM runs FlashInfer's TRT-LLM attention kernels on Blackwell
		// (trtllmattn.go), not FlashAttention-3 (fa3.go); FA4's terms
		// are its sm_90 kernel's (fa4.go).
		c.FA3, c.FA4 = nil, nil
		// The KV-cache write's block term is fitted on H100 rows
		// (kvcachesave.go), and the B200's attention terms beside the copy
		// class's curve (trtllmattn.go): Blackwell keeps that curve.
		c.KVCacheSave = nil
		// Its own cuBLAS terms, fitted on the B200's rows (cublas.go);
		// NewDevice keeps them to compute capability 10.0.
		c.CuBLAS = &blackwellCuBLAS
		c.TRTLLM = &blackwellTRTLLM
		// FlashInfer's TRT-LLM and CUTLASS fused MoE (moeblackwell.go).
		c.FlashInferMoE, c.CutlassFP8MoE = blackwellMoE, nil
		// The fused_experts terms are fitted on H100 rows (moetriton.go).
		c.TritonMoE = nil
		c.TritonAttention = &blackwellTriton
		return c
	}
	return hopperCurves
}

// hopperCurves is fitted on the calibration rows of Vidur's H100 and
// Frontier's H800 profiles in testdata (BenchmarkCalibrateCurves reproduces
// the fit); the rows, the public figures behind the terms the profiles
// cannot fix, and each term's evidence: docs/device-model.md, "How the
// curves were fitted".
var hopperCurves = Curves{Class: [numKernelClasses]Curve{
	ClassGEMM:        {FloorUs: 3.38, MemEff: 0.883, ComputeEff: 0.77, IterUs: 0.0517, L2Gain: 2.5, WarmFloorUs: 2.58, TileL2GBps: 8500, HostPreUs: 21.8, HostUs: 14.9},
	ClassNorm:        {FloorUs: 2.08, MemEff: 0.255, LegacyFloorUs: 3.14, IterUs: 0.112, L2ResidentMB: 12.1, L2Gain: 1.73, HostPreUs: 13.7, HostUs: 19.1},
	ClassAct:         {FloorUs: 1.49, MemEff: 0.562, IterUs: 0.361, HostPreUs: 2.77, HostUs: 22.4},
	ClassRope:        {FloorUs: 1.67, MemEff: 0.519, IterUs: 0.413, HostPreUs: 15.4, HostUs: 21.5},
	ClassAdd:         {FloorUs: 2.78, MemEff: 0.919, LegacyFloorUs: 1.92, L2ResidentMB: 9.7, L2Gain: 1.61, HostPreUs: 28.1, HostUs: 33.2},
	ClassEmbedding:   {FloorUs: 2.19, MemEff: 0.666, SmallIndexUs: 0.611, LegacyGatherEff: 0.183, HostPreUs: 8.07, HostUs: 16.3},
	ClassCopy:        {FloorUs: 2.2, MemEff: 0.92, HostPreUs: 10.7, HostUs: 10.1},
	ClassAttnPrefill: {FloorUs: 9.22, MemEff: 0.563, ComputeEff: 0.55, HalfFLOPs: 6.95e+06, HostPreUs: 39.8, HostUs: 52.3},
	ClassAttnDecode:  {FloorUs: 7.38, MemEff: 0.85, HostPreUs: 26.9, HostUs: 40.2},
	ClassMoERouting:  {FloorUs: 6.97, MemEff: 0.000767, HostPreUs: 1.3, HostUs: 60.8},
	ClassMoEShuffle:  {FloorUs: 4.03, MemEff: 0.464, IterUs: 0.148, HostPreUs: 1, HostUs: 13.7},
	ClassMoEGEMM:     {FloorUs: 1.87, MemEff: 0.92, ComputeEff: 0.91, TileLoadShare: 0.945, DefaultTileSMTFLOPS: 0.36 * 0.91 * 989 / 132, IterUs: 0.148, HostPreUs: 32.6, HostUs: 84.7},
	ClassAllReduce:   {FloorUs: 27.6, MemEff: 0.778},
	ClassSendRecv:    {FloorUs: 7.16, MemEff: 0.746, NetFloorUs: 20.6},
	ClassAllToAll:    {FloorUs: 10, MemEff: 0.7},
}, Host: map[string]HostTerms{
	"add":                      {PreUs: 30.4, Us: 32.6},
	"attn_decode":              {PreUs: 26.9, Us: 40.2},
	"attn_input_reshape":       {PreUs: 9.74, Us: 11.2},
	"attn_kv_cache_save":       {PreUs: 20.5, Us: 20.5},
	"attn_output_reshape":      {PreUs: 10.1, Us: 10.1},
	"attn_post_proj":           {PreUs: 19.6, Us: 28.1},
	"attn_pre_proj":            {PreUs: 37.7, Us: 62.7},
	"attn_prefill":             {PreUs: 39.8, Us: 52.3},
	"attn_rope":                {PreUs: 14.6, Us: 21.5},
	"emb":                      {PreUs: 5.19, Us: 16.8},
	"input_layernorm":          {PreUs: 10.9, Us: 16.5},
	"mlp_act":                  {PreUs: 1.42, Us: 29},
	"mlp_down_proj":            {PreUs: 15.9, Us: 18.5},
	"mlp_up_proj":              {PreUs: 19.5, Us: 26.2},
	"moe_gating_linear":        {PreUs: 21, Us: 21},
	"moe_gating_routing_topk":  {PreUs: 1.3, Us: 60.8},
	"moe_grouped_gemm":         {PreUs: 32.6, Us: 84.7},
	"moe_shuffling":            {PreUs: 1, Us: 13.7},
	"post_attention_layernorm": {PreUs: 16.3, Us: 19.2},
}, ColdHostFactor: 1, FP8ComputeEff: 0.6, FP8TritonMoEEff: 0.12, KernelHostUs: 22, EventGapUs: 3.66,
	CustomAllReduce: hopperCustomAllReduce, FA3: &hopperFA3, FA4: &hopperFA4, KVCacheSave: &hopperKVCacheSave, CuBLAS: &hopperCuBLAS, TritonMoE: &hopperTritonMoE, FlashInferMoE: hopperCutlassMoE, CutlassFP8MoE: &hopperCutlassFP8MoE}

// ampereCurves is fitted on the calibration rows of Frontier's A800
// profile of Qwen3-30B-A3B (kernel-traced rows for the kernel terms, eager
// rows for the host terms); MoE and collectives are Hopper's. The evidence:
// docs/device-model.md, "How the curves were fitted".
var ampereCurves = Curves{Class: [numKernelClasses]Curve{
	ClassGEMM:        {FloorUs: 10.6, MemEff: 0.805, ComputeEff: 0.783, HostPreUs: 57.6, HostUs: 17},
	ClassNorm:        {FloorUs: 3.76, MemEff: 0.9, IterUs: 0.301, RowUs: 0.0013, HostPreUs: 1.04, HostUs: 3.43},
	ClassAct:         {FloorUs: 6.28, MemEff: 0.89, IterUs: 1.06, HostPreUs: 8.48, HostUs: 40},
	ClassRope:        {FloorUs: 3.98, MemEff: 0.459, IterUs: 0.0924, FullIterUs: 1.4, HostPreUs: 28.2, HostUs: 9.82},
	ClassAdd:         {FloorUs: 2.78, MemEff: 0.919, LegacyFloorUs: 1.92, L2ResidentMB: 9.7, L2Gain: 1.61, HostPreUs: 28.1, HostUs: 33.2},
	ClassEmbedding:   {FloorUs: 2.87, MemEff: 0.92, SmallIndexUs: 0.725, HostPreUs: 1, HostUs: 1},
	ClassCopy:        {FloorUs: 3.74, MemEff: 0.771, HostPreUs: 17.1, HostUs: 16},
	ClassAttnPrefill: {FloorUs: 10.7, IterUs: 3.69, RowUs: 0.00467, MergeFloorUs: 2.65, L2Gain: 1.52, HostPreUs: 60, HostUs: 74.2},
	ClassAttnDecode:  {FloorUs: 16.1, MemEff: 0.92, HostPreUs: 57.1, HostUs: 1},
	ClassMoERouting:  {FloorUs: 6.97, MemEff: 0.000767, HostPreUs: 1.3, HostUs: 60.8},
	ClassMoEShuffle:  {FloorUs: 4.03, MemEff: 0.464, IterUs: 0.148, HostPreUs: 1, HostUs: 13.7},
	ClassMoEGEMM:     {FloorUs: 1.87, MemEff: 0.92, ComputeEff: 0.91, TileLoadShare: 0.945, DefaultTileSMTFLOPS: 0.36 * 0.91 * 312 / 108, IterUs: 0.148, HostPreUs: 32.6, HostUs: 84.7},
	ClassAllReduce:   {FloorUs: 27.6, MemEff: 0.778},
	ClassSendRecv:    {FloorUs: 7.16, MemEff: 0.746, NetFloorUs: 20.6},
	ClassAllToAll:    {FloorUs: 10, MemEff: 0.7},
}, Host: map[string]HostTerms{
	"attn_decode":              {PreUs: 22.6, Us: 78.8},
	"attn_input_reshape":       {PreUs: 17, Us: 17.2},
	"attn_kv_cache_save":       {PreUs: 26.2, Us: 41.2},
	"attn_output_reshape":      {PreUs: 16.9, Us: 16.9},
	"attn_post_proj":           {PreUs: 63.4, Us: 79.6},
	"attn_pre_proj":            {PreUs: 33.5, Us: 151},
	"attn_prefill":             {PreUs: 39.5, Us: 85.4},
	"attn_rope":                {PreUs: 22.8, Us: 34.8},
	"emb":                      {PreUs: 1, Us: 1},
	"input_layernorm":          {PreUs: 2.15, Us: 14.6},
	"lm_head_linear":           {PreUs: 83.2, Us: 96.8},
	"mlp_act":                  {PreUs: 15.1, Us: 39.8},
	"mlp_down_proj":            {PreUs: 51.4, Us: 64.8},
	"mlp_up_proj":              {PreUs: 34.5, Us: 74.6},
	"post_attention_layernorm": {PreUs: 1.53, Us: 7.35},
}, ColdHostFactor: 3, FP8ComputeEff: 0, FP8TritonMoEEff: 0, KernelHostUs: 22, EventGapUs: 3.81,
	CustomAllReduce: ampereCustomAllReduce, GEMMTiles: ampereGEMMTiles, CuBLAS: &ampereCuBLAS, FA2: &ampereFA2}
