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
		return c
	case spec.ArchBlackwell:
		// No old-default fused-MoE time on a Blackwell GPU was read (vLLM
		// PR #31448's B200 log has one; only its 1-8-token rows, in the
		// small-batch branch, were seen), and the one Blackwell MoE run
		// ftk replays (LLMServingSim's RTX PRO 6000, README) is vLLM
		// 0.19.0, after PR #34846: not applied, a stated gap (a B200 SM
		// reaches 15 TFLOPS, six times the old tiles' per-SM rate).
		c := hopperCurves
		c.Class[ClassMoEGEMM].DefaultTileSMTFLOPS = 0
		return c
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
// Public figures where the profiles cannot fix a term (not fitted):
//   - attention prefill ComputeEff 0.55: the H800 prefill rows reach only
//     a few hundred tokens; on H100 FlashAttention-2 reaches about 35% of
//     the BF16 peak and FlashAttention-3 up to 75% (740 TFLOPS), Shah et
//     al., "FlashAttention-3", arXiv 2407.08608 (2024), abstract;
//   - attention decode MemEff 0.85: the H800 decode rows hold at most 96
//     tokens of context; FlashInfer's decode kernels reach near-peak HBM
//     bandwidth on long contexts (flashinfer.ai blog, 2024-02-02);
//   - FP8ComputeEff 0.6 (dense FP8 linear layers, CUTLASS; fp8moe.go):
//     DeepGEMM (deepseek-ai/DeepGEMM README, 2025) reports 1,000-1,550
//     TFLOPS for FP8 GEMMs on H800, 0.5-0.78 of the 1,979 TFLOPS peak, and
//     FBGEMM's CUTLASS row-wise FP8 GEMM reaches 1,083-1,141 TFLOPS on an
//     H100 (500 W) at 8,192-65,536 rows (pytorch/FBGEMM PR #2546, April
//     2024), 0.55-0.58; no FP8 profile is in testdata;
//   - FP8TritonMoEEff 0.12 (MoE layers of fp8 checkpoints, vLLM's
//     fused-MoE Triton kernel; fp8moe.go): chosen on vLLM PR #24700's H100
//     kernel times of Qwen3-30B-A3B FP8 (benchmark_moe.py, TP1, September
//     2025) at 1,024 and 4,096 tokens, where the tuned config's tiles pad
//     each expert's rows as ftk's default ones do; the PR's other batch
//     sizes are held out (TestFP8FusedMoEOnHopperAgainstPublished); 0.11
//     before the activation and sum were priced on their own;
//   - CustomAllReduce floor 8 us, MemEff 0.7: a guess (vLLM's custom
//     all-reduce is one kernel with a cross-GPU barrier; no profile of it
//     is in testdata; Vidur's NCCL rows give 28 us for small sizes);
//   - grouped GEMM ComputeEff 0.91 (the roof; moegemm.go): the H800 MoE
//     rows hold 1-35 tokens per expert, far below it; chosen on vLLM PR
//     #24700's H100 kernel times of Mixtral-8x7B at TP2 (BF16, 1,024 and
//     1,536 tokens: 256-384 tokens per expert, 0.44-0.49 of the peak)
//     with the kernel floor and IterUs refitted on the H800 rows for each
//     candidate roof (0.78-0.95 in steps of 0.01; TestFusedMoEAgainstPublished
//     holds the other points out). It was 0.8 while one roofline priced
//     the whole fused-MoE layer; since its SiLU-and-mul and moe_sum are
//     priced as kernels of their own after the GEMMs (moeepilogue.go: they
//     are 7% of those Mixtral times) the GEMMs' own roof is higher.
//     TileLoadShare is kept at its choice since the K-loop term (IterUs,
//     moegemm.go) came in, whose fit on the H800 rows with it free (1.23)
//     moved PR #24700's held-out Mixtral points from +14% to +41%: only
//     the floor and IterUs are refitted;
//   - grouped GEMM DefaultTileSMTFLOPS 0.36 x 0.91 x 989 / 132 = 2.45
//     TFLOPS an SM (moeconfig.go): the MMA rate of vLLM's old default
//     fused-MoE tiles (64 x 64 x 32, up to vLLM PR #34846), 0.36 of the
//     roof on an H100 (132 SMs, 989 TFLOPS), whose tuned configs' kernel
//     times the roof is chosen on. The
//     H800 KERNEL_ONLY rows beyond the small-batch branch (17-64 tokens
//     on 16 experts, old default) ask for it below 1: their grouped-GEMM
//     MAPE falls from 14.0/8.9% (Phi-tiny/Qwen3-tiny) at 1 to 12.7/7.3%
//     at 0.36 and keeps falling to about 0.25 (floor and IterUs refitted
//     per value barely move: 1.87-1.94 us, 0.145-0.148 us); the lowest
//     value within PR #34846's H100 measurement (old default at most 2x
//     the new, tuned-like one for many-expert models up to 4,096 tokens:
//     TestDefaultMoEConfigTiles, 1.97x at OLMoE's 4,096 tokens) is taken.
//     It is a rate per SM: the tiles' operand loads per multiply-add,
//     not the tensor cores, bound it, so a GPU whose SMs compute less
//     (the H20: 1.9 TFLOPS an SM) runs them at its roof, as vLLM PR
//     #44152's H20 times show (old default within 0.96-1.02x of tuned
//     configs at 2,048-4,096 tokens on six shapes; held out,
//     TestDefaultMoEConfigTilesOnH20). Ampere takes 0.36 of its roof on
//     an A100 (no old-default-vs-tuned time at large batches was found
//     for it); Blackwell has none (above);
//   - ColdHostFactor 1: the H800 MoE files time standalone_legacy and
//     prefill_hot gating alike (ratio 0.96-1.06).
//
// KernelHostUs is fitted (fitKernelHostUs) on the CUDA_EVENT rows of the
// operators whose kernel count differs between the H800 profiles: the QKV
// projection with and without Qwen3's Q/K norms, uniform routing at top-8
// and top-2. SmallIndexUs and LegacyGatherEff (embedding: PyTorch's
// small-index kernel, and its large-index kernel before 2.8, which only
// Vidur's rows time; MemEff is the vectorised gather of PyTorch 2.8 that
// Frontier's rows time, kernelclass.go) and IterUs (activation, rope, norm:
// vLLM runs them one thread block per token, roofline.go) are fitted with
// their classes' other kernel terms, and so is IterUs of the MoE
// shuffle (vLLM's moe_align_block_size counting loop, moealign.go) and of
// the grouped GEMM (its K loop, moegemm.go).
//
// The GEMM's K loop (IterUs per 128-byte K step, skinnygemm.go) is fitted
// on the KERNEL_ONLY rows with the GEMM's floor, MemEff and ComputeEff held
// at their fit before it came in. Freed, they go to 2.6-2.9 us, 0.84-0.88
// and 0.77: the H800 Frontier rows gain (Phi-tiny KERNEL_ONLY 8.9 -> 8.3%,
// Qwen3-tiny 5.6 -> 5.1%) and Vidur's H100 rows lose (9.6 -> 9.9%; its
// small GEMMs read up to 40% slower than the same shapes on the H800 stacks),
// a freed MemEff (0.84) moves the llama2 CUDA_EVENT rows' embedding and
// norm 11 -> 19% through the profiler's event chain, and validate's
// TestCalibrateFreesWhatRunsIdentify flips with ComputeEff 0.770 -> 0.773
// alone (its graph-mode host scale lands at x2.2 for an injected x3).
// Qwen3's Q/K norms and their input copies, timed with the QKV
// projection, are priced by the norm and copy classes (qknorm.go), not as
// GEMM floors.
//
// The host terms of the linear ops (embedding, norms, projections, rope,
// activation, add) and EventGapUs are fitted jointly (fitEventChain) on
// the H800 CUDA_EVENT linear rows read as the profiler runs them, op after
// op in each forward pass (eventchain.go): an op's host time to its end
// event shows mostly in the op after it, which reads its kernel plus
// EventGapUs (3.6 us) when the GPU is still behind. A generation with
// EventGapUs 0 has host terms fitted on ops in isolation. The
// joint fit is flat along some directions (the activation's host time to
// its end event is seen only in Llama-2-7B's TP4/TP8 rows, the profiler's
// untimed host times only through the ops after them): refits started
// from these constants land at 5.0-5.8% mean on llama2 CUDA_EVENT with its
// 8 embedding rows at 15-18% (these constants: 5.2%, 10.7%).
//
// Vidur's rows are read as its profiler read them: Kineto traces before
// March 2024 held each kernel's duration in whole microseconds, truncated,
// so a row reads the floor of the kernel time (realprofile_test.go and
// wholeus_test.go: wholeMicroseconds, traceReadingMs). Its 1-8-token add
// reads 1 us, a kernel of 1-2 us.
//
// The residual add (fitted with the class, on Vidur's rows and Phi-tiny's
// add): Vidur's stack runs PyTorch's element-wise add (LegacyFloorUs 1.92
// us), Frontier's add column times vLLM's fused add + RMSNorm (FloorUs
// 2.78 us; Curve.LegacyFloorUs says why); its bytes pass the L2 at 1.61x
// the HBM rate (L2Gain: 4.96 TB/s on H100, the L2 holds 50 MB) and the
// bytes past 9.7 MB come from HBM (L2ResidentMB). One floor and no L2 roof
// priced Vidur's add 186% too slow at 1-8 tokens and 25% too fast at 512
// (15.3% MAPE); now 4.1% (held-out rows 3.7%). The moe_sum kernel after
// the fused-MoE GEMMs is priced with FloorUs and the HBM term
// (moeepilogue.go).
//
// Fitted efficiencies are bounded by 0.92 of HBM bandwidth and 0.85 of the
// peak; they are effective figures for the bytes Op.Work counts (an
// operand still in the 50 MB L2 is counted as read from HBM, except for
// the classes with L2ResidentMB).
//
// The norm's L2 roof (L2ResidentMB 12.1, L2Gain 1.73, fitted with the
// class; held since the older stack's launch cost, LegacyFloorUs 3.14 us,
// came in: curvefit_test.go kernelFields says why): Vidur's RMSNorm of Llama-2-7B (hidden 4,096, read and write 16 KB
// a token) grows 10.7 ns a token up to 2,048 tokens (1.5 TB/s: everything
// in the L2) and 17.6 ns a token beyond (0.9 TB/s: 13, 25, 62 us at 1,024,
// 2,048, 4,096 tokens); one HBM efficiency priced both at 1.4 TB/s, 12-26%
// too fast at 2,048-4,096 tokens. The H800 rows (at most 128 tokens) are
// set by IterUs and do not move. Held out: vLLM PR #11241's H100 timings of
// the same scalar kernel (2024-12-16; with a clone, L2 flushed) are within
// +7..+18% at 1,024-4,096 tokens (README). vLLM's vectorised kernel (PR
// #27931, 2025-11-01) is about 2.7x faster at 8,192 tokens: not modelled.
// The GEMM's WarmFloorUs and L2Gain price only profile rows whose
// profiler repeats one block that fits in the L2 (warml2.go), never
// serving.
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
	CustomAllReduce: Curve{FloorUs: 8, MemEff: 0.7}}

// ampereCurves: fitted on the calibration rows of
// frontier-a800-qwen3-30b-a3b (Frontier's A800 profile of the full
// Qwen3-30B-A3B, labelled CUDA_EVENT, TP1-8, FlashInfer). Its rows whose
// samples are whole nanoseconds were timed from a kernel trace, not CUDA
// events (kernelTraced in realprofile_test.go: the attention rows at TP2,
// most at TP4 and TP8, the linear rows at TP2 and TP4): they fix the
// kernel terms, the eager rows the host terms. The GEMM's kernel rows are
// the attention projections at TP2/TP4 only (N <= 2,560 outputs; their
// cuBLAS tiles, GEMMTiles, are the A800's own: gemmtiles.go), so its kernel terms are
// fitted on them together with the eager GEMM rows (the LM head's 0.4-10
// ms eager readings are its kernel: 0.8 of the peak at 4,096 tokens).
// Attention rows are read through the profiler's run (attnchain_test.go)
// and linear rows through its forward pass (eventchain.go) with
// EventGapUs fitted jointly with the host terms (3.81 us; the file's view
// ops read 3.7-3.9 us when the GPU is behind). There is no Ampere MoE or
// collective profile in testdata: those classes are Hopper's (a stated
// approximation; bandwidths are the device's own). The norm's RowUs
// (1.3 ns a row, qknorm.go) is chosen on the calibration rows of the
// QKV projection (scan 1.1-1.6 ns in 0.1: kernel-traced rows alone
// best at 1.5 ns, 3.0%, eager rows alone at 1.1 ns, 5.9%; 1.3 gives the
// least sum, 3.8% and 7.2%, held-out rows 3.9%), then the linear and
// attention host terms refitted (fitEventChain, kernel terms held; eager
// pre_proj 7.2 -> 6.7%). The rotary embedding's FullIterUs (1.4 us; scan
// 1.2-1.6 in 0.1 on the kernel-traced rows: 5.5, 3.9, 3.3, 6.5, 10.6%)
// is set by its TP4 rows: vLLM's kernel loops over the q heads, then the
// k heads (csrc/pos_encoding_kernels.cu, apply_rotary_embedding: 512
// threads, so at TP4 one full and one 64-lane iteration a token), and
// from ~450 tokens the time grows 6.5 ns a token at TP4 against 9.8 at
// TP2 (two iterations against three, where the bytes would give half);
// TP2 and the eager TP1 rows stay bandwidth-bound. ColdHostFactor 3 is
// docs/formats.md's figure for Frontier's A800 MoE file (not in testdata).
// The attention prefill is FlashInfer's FA2 kernel priced CTA by CTA from
// its plan (attnprefill.go), not a roofline: FloorUs 10.7 us, IterUs 3.69
// us a 64-key tile of one CTA alone on an SM (two share it at 1.3x,
// flashInferPairRate), and for a split-KV prefill the merge kernel
// (MergeFloorUs 2.65 us, RowUs 4.67 ns a (token, q head) row, FP32 states
// at L2Gain 1.52x the HBM rate, 3.1 TB/s), fitted (Nelder-Mead, MAPE) on
// the 559 kernel-traced calibration prefill rows alone (TP2/4/8, 32-4,096
// new tokens over 0-4,000 cached: every regime the eager rows hold);
// kernelFields' fit from these values moves them by under 3% (10.68, 3.69,
// 2.73, 4.67 ns, 1.54). The roofline it replaced (FloorUs 8.3, ComputeEff
// 0.298, HalfFLOPs 1.54e9) scored 15.7% on those rows, 1.5% now (held-out
// 16.1 -> 1.6%). Then the attention ops' host terms were refitted on the
// eager rows through the profiler's run (attnchain_test.go; kernel terms
// held): attn_prefill 60.1/73.3 -> 39.5/85.4 us, attn_kv_cache_save
// PreUs 31.1 -> 26.2 us, the others within 0.2 us.
// Ampere has no FP8 tensor cores (FP8ComputeEff 0: FP8 weights compute at
// the BF16 peak). KernelHostUs is Hopper's (the A800 file times each
// operator at one kernel count, so it cannot fix it).
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
	CustomAllReduce: Curve{FloorUs: 8, MemEff: 0.7}, GEMMTiles: ampereGEMMTiles}
