package roofline

import "github.com/ftk-dev/ftk/spec"

// KernelClass groups operators that run the same kind of GPU kernel, so one
// fitted curve prices all of them (docs/device-model.md, "Kernel classes
// and their evidence").
type KernelClass int

const (
	ClassGEMM        KernelClass = iota // dense projections, LM head, router
	ClassNorm                           // RMSNorm / LayerNorm
	ClassAct                            // SiLU-and-mul (gated activation)
	ClassRope                           // rotary embedding (with q/k norm when the model has it)
	ClassAdd                            // residual add
	ClassEmbedding                      // embedding gather
	ClassCopy                           // attention reshapes and the KV-cache write
	ClassAttnPrefill                    // FlashAttention / FlashInfer prefill
	ClassAttnDecode                     // paged decode attention
	ClassMoERouting                     // top-k routing
	ClassMoEShuffle                     // token permutation to experts
	ClassMoEGEMM                        // fused / grouped expert GEMM
	ClassAllReduce                      // TP all-reduce
	ClassSendRecv                       // pipeline send/recv
	ClassAllToAll                       // EP dispatch / combine
	numKernelClasses
)

var kernelClassNames = [numKernelClasses]string{"gemm", "norm", "act", "rope", "add", "embedding", "copy",
	"attn_prefill", "attn_decode", "moe_routing", "moe_shuffle", "moe_gemm", "all_reduce", "send_recv", "all_to_all"}

func (c KernelClass) String() string {
	if c < 0 || c >= numKernelClasses {
		return "unknown"
	}
	return kernelClassNames[c]
}

// ClassOf returns the kernel class of operator op.
func ClassOf(op string) KernelClass {
	switch op {
	case spec.OpInputLayernorm, spec.OpPostAttnLayernorm:
		return ClassNorm
	case spec.OpMLPAct, spec.OpSharedAct:
		return ClassAct
	case spec.OpAttnRope:
		return ClassRope
	case spec.OpAdd:
		return ClassAdd
	case spec.OpEmb:
		return ClassEmbedding
	case spec.OpAttnInputReshape, spec.OpAttnOutputReshape, spec.OpAttnKVCacheSave:
		return ClassCopy
	case spec.OpAttnPrefill:
		return ClassAttnPrefill
	case spec.OpAttnDecode:
		return ClassAttnDecode
	case spec.OpMoERoutingTopK:
		return ClassMoERouting
	case spec.OpMoEShuffling:
		return ClassMoEShuffle
	case spec.OpMoEGroupedGEMM:
		return ClassMoEGEMM
	case spec.OpAllReduce:
		return ClassAllReduce
	case spec.OpSendRecv:
		return ClassSendRecv
	case spec.OpEPDispatch, spec.OpEPCombine:
		return ClassAllToAll
	}
	return ClassGEMM
}

// Curve is the fitted cost curve of one kernel class on one device
// generation. GPU time (what KERNEL_ONLY sees) is
//
//	kernels x FloorUs + max(bytes / (bandwidth x MemEff), FLOPs / (peak x ComputeEff x shape))
//
// where shape is the wave utilisation of a GEMM's output tiles, or, for
// attention, FLOPs / (FLOPs + HalfFLOPs): small kernels cannot fill the
// machine. For collectives bandwidth is the link's and the bytes are the
// algorithm's traffic (ring all-reduce 2(n-1)/n of the buffer).
//
// An eager op timed with CUDA events around it (CUDA_EVENT) also sees the
// host: the start event is recorded, the host spends HostPreUs before the
// kernel is queued, and the end event is queued HostUs after the start, so
//
//	CUDA_EVENT = max(HostPreUs + GPU time, HostUs).
type Curve struct {
	FloorUs    float64 // GPU time of one launch of the class's kernel doing no work
	MemEff     float64 // fraction of HBM (or link) bandwidth reached on large sizes
	ComputeEff float64 // fraction of the dense peak reached on large shapes; 0 = never compute-bound
	HalfFLOPs  float64 // attention: FLOPs at which half of ComputeEff is reached
	// TileLoadShare is the grouped GEMM's per-expert overhead: the share
	// of an expert's weight-load time its tiles spend beside their MMA
	// work (moegemm.go).
	TileLoadShare float64
	// DefaultTileSMTFLOPS is the MMA rate per SM, TFLOPS, that the
	// fused-MoE grouped GEMM's tiles reach under vLLM's old default config
	// for batches of more tokens than local experts, where it is below
	// the roof's (moeconfig.go); 0 = never below.
	DefaultTileSMTFLOPS float64
	// SmallIndexUs is the embedding gather's time per token when it takes
	// at most smallIndexMax tokens: PyTorch's index_select then runs its
	// small-index kernel, in which every thread loops over the indices one
	// after another (aten/src/ATen/native/cuda/Indexing.cu,
	// index_select_out_cuda_impl: "if (numIndices <= 16)"), so the time
	// grows by about one dependent global-memory access per token.
	SmallIndexUs float64
	// LegacyGatherEff replaces MemEff for the embedding gather of more
	// than smallIndexMax tokens under PyTorch before 2.8
	// (Roofline.LegacyStack): index_select then ran its scalar
	// large-index kernel (indexSelectLargeIndex: one 2-byte element a
	// thread, min(elements/128, 8 x SMs) blocks of 128 threads, so 1,024
	// threads a SM), which reaches a fraction of HBM bandwidth (pytorch
	// PR #145999, 2025-01-30: about 30% on an A100; issue #151612,
	// 2025-04-17: 136 us for a 4,096 x 5,120 BF16 index_select against
	// 36 us for gather). PyTorch PR #151715 (April 2025, in 2.8) made
	// index_select call gather's vectorised kernel instead (one block a
	// token, 16-byte loads: IndexKernelUtils.cu,
	// vectorized_gather_kernel), which MemEff prices. 0: no legacy path.
	LegacyGatherEff float64
	// LegacyFloorUs replaces FloorUs under Roofline.LegacyStack; 0: no
	// legacy kernel. RMSNorm: Vidur's stack runs sarathi-serve's copy of
	// vLLM's 2023 rms_norm (csrc/layernorm_kernels.cu, FasterTransformer's
	// blockReduceSum), whose one wave of tokens takes 4.0-4.3 us on the
	// H100 where the H800 profiles' vLLM kernel takes 2.4-3.0 us; fitted
	// as a launch cost of its own (the H800 rows never leave one wave, so
	// nothing else tells the two apart). Which code difference costs the
	// microsecond is not established (vLLM has since moved to
	// cub::BlockReduce and, in PR #26234, 2025-10-04, to 16-byte vector
	// reads in the sum of squares). The residual add: an older stack runs PyTorch's
	// element-wise add (Vidur's profiling/mlp/mlp_impl.py times residual +
	// hidden_states), while on a vLLM stack the add is fused into the
	// RMSNorm after it (fused_add_rms_norm, csrc/layernorm_kernels.cu) and
	// Frontier's linear-op profiler times the add of a model it does not
	// mark as fused (phimoe) around that call
	// (frontier/profiling/linear_op/linear_op_impl.py, GPTBlock): a
	// per-token reduction kernel, whose launch costs about 1 us more
	// (Phi-tiny-MoE's add on the H800, 2.8-3.1 us, reads between its two
	// norms; Vidur's H100 add of 1-8 tokens reads 1 us, truncated from
	// 1.8-2 us: realprofile_test.go, wholeMicroseconds).
	LegacyFloorUs float64
	// IterUs is one loop iteration of a kernel that runs one thread block
	// per token (tokenBlockLoop): with few tokens the block's serial loop
	// over the token's elements, not bandwidth, sets the time. For the
	// GEMM classes it is one step of a thread block's K loop (gemmKLoop,
	// fusedMoEKLoop); for the MoE shuffle one pass of its counting loop;
	// for the attention prefill one KV tile of a CTA (attnprefill.go: set,
	// the class is priced CTA by CTA, not by its roofline terms).
	IterUs float64
	// FullIterUs is one loop iteration of a one-block-per-token kernel
	// (tokenBlockLoop) when the SMs are full of its blocks: many tokens
	// take tokens / resident blocks x iterations x FullIterUs, blocks
	// retiring and refilling continuously (IterUs is an iteration in a
	// partial wave, at unloaded latency). 0: none.
	FullIterUs float64
	// RowUs is the norm kernel's time per row (qknorm.go): vLLM's
	// rms_norm custom op runs one thread block per row, and over Qwen3's
	// head rows of 128 elements the blocks' load-reduce-scale chain, not
	// bandwidth, sets the pace. A floor under the memory time (max), so
	// wide rows (a token's hidden state) never reach it; not applied
	// compiled (Roofline.Compiled: Inductor's norm kernels). 0: none.
	// For the attention prefill (attnprefill.go) it is the merge kernel's
	// time per merged (token, q head) row of a split-KV prefill.
	RowUs float64
	// MergeFloorUs is, for the attention prefill, the launch of the merge
	// kernel a split-KV prefill runs after its CTAs (attnprefill.go).
	MergeFloorUs float64
	// L2ResidentMB is the megabytes of a memory-bound elementwise
	// kernel's traffic served by the L2 cache rather than HBM: its input
	// was written by the kernel before it, and its own writes end in the
	// write-back L2 (50 MB on H100 and H800, NVIDIA H100 Tensor Core GPU
	// Architecture whitepaper, 2022). Fitted on the classes whose profile
	// rows move more than the L2 holds; 0 = every byte from HBM.
	L2ResidentMB float64
	// L2Gain is how many times faster than from HBM (at MemEff) the
	// class's kernel moves bytes through the L2. With it, the memory time
	// is a two-level roofline: the larger of all bytes at the L2 rate and
	// the bytes past L2ResidentMB at the HBM rate, so a kernel whose
	// traffic fits the L2 is not free but runs at the L2 rate; 0 = no L2
	// roof (the resident bytes cost nothing). For the GEMM class it is the
	// rate of a warm GEMM's weights (WarmFloorUs); for a cold GEMM it never
	// binds.
	L2Gain float64
	// WarmFloorUs replaces FloorUs for a GEMM whose weights are still in
	// the L2 from the block before (warml2.go: a profiler repeating one
	// block); its memory time is then the weights at the L2 rate (L2Gain)
	// plus its K loop (IterUs a step). 0: never priced warm.
	WarmFloorUs float64
	// TileL2GBps is, for the GEMM class, the rate at which a GEMM's
	// thread blocks together read their tiles' operands through the L2
	// (tilel2.go): a floor under the time of a grid of at most one wave.
	// 0: no such bound.
	TileL2GBps float64
	// NetFloorUs replaces FloorUs for a collective whose group spans
	// nodes: the network's latency (NIC, proxy thread, RDMA round trip)
	// in place of NVLink's; 0 = FloorUs. Vidur's H100 DGX send/recv rows
	// take 17-19 us at 2-64 KB across two nodes and 5-9 us within one
	// node; nccl-tests on two A100 nodes over InfiniBand HDR take 19-20 us
	// for an 8-byte all-reduce (NVIDIA/nccl-tests issue #150, 2023).
	NetFloorUs float64
	HostPreUs  float64 // CUDA_EVENT: host time from the start event to the kernel's launch
	HostUs     float64 // CUDA_EVENT: host time from the start event to the end event
}

// HostTerms are the CUDA_EVENT host terms of one eager operator (Curve).
type HostTerms struct{ PreUs, Us float64 }

// Curves is one device generation's table: kernel curves by class, and
// host terms by operator where an operator's eager Python path (not its
// kernel) sets them; other operators take their class's.
type Curves struct {
	Class [numKernelClasses]Curve
	Host  map[string]HostTerms
	// ColdHostFactor scales the host terms of a MoE gating op timed
	// standalone (cold, gating context standalone_legacy) rather than right
	// after FFN work (prefill_hot).
	ColdHostFactor float64
	// CustomAllReduce is vLLM's custom all-reduce (Roofline, customar.go).
	CustomAllReduce CustomAllReduce
	// KernelHostUs is the eager host time of each kernel of an operator
	// past its first (CUDA_EVENT): the Q/K norms a QKV projection runs, the
	// per-choice kernels of uniform top-k routing.
	KernelHostUs float64
	// EventGapUs is the GPU time a CUDA event pair adds around a kernel
	// when the stream is already busy as the start event is recorded
	// (eventchain.go).
	EventGapUs float64
	// FP8ComputeEff replaces the GEMM class's ComputeEff for FP8 GEMMs
	// (W8A8: both operands FP8), which run at the FP8 peak: the dense
	// linear layers (CUTLASS scaled_mm) and CUTLASS fused MoE.
	FP8ComputeEff float64
	// FP8TritonMoEEff replaces the grouped GEMM's roof for FP8 MoE layers
	// that vLLM runs with its fused-MoE Triton kernel (fp8moe.go); 0: the
	// FP8ComputeEff roof.
	FP8TritonMoEEff float64
	// GEMMTiles are the output tiles the generation's BLAS picks from,
	// smallest first (gemmtiles.go); none: 128x128 (64 rows at decode
	// sizes, skinnygemm.go).
	GEMMTiles []GEMMTile
	// CuBLAS prices BF16 linear layers as cuBLAS runs them (cublas.go);
	// nil: the GEMM class's curve.
	CuBLAS *CuBLAS
	// FA3 prices attention prefill and decode as FlashAttention-3 runs
	// them (fa3.go); nil: the attention classes' curves.
	FA3 *FA3
	// FA2 prices attention prefill and decode as vllm-flash-attn's
	// FlashAttention-2 runs them on Ampere (fa2.go), where Kernels.Attention
	// names it; nil: none.
	FA2 *FA2
	// FA4 prices attention as FlashAttention-4 runs it on Hopper (fa4.go),
	// for the head dims vLLM gives it there (Roofline.fa4); nil: none.
	FA4 *FA4
	// KVCacheSave prices the KV-cache write as reshape_and_cache_flash
	// runs it (kvcachesave.go); nil: the copy class's curve over spec's
	// bytes.
	KVCacheSave *KVCacheSave
	// TRTLLM prices attention prefill and decode as FlashInfer's TRT-LLM
	// kernels run them (trtllmattn.go); nil: FA3 or the attention
	// classes' curves.
	TRTLLM *TRTLLMAttn
	// FlashInferMoE prices fused-MoE layers that run FlashInfer's kernels
	// (named by Kernels.MoE; moeblackwell.go); none: the grouped-GEMM class.
	FlashInferMoE map[MoETermsKey]FlashInferMoE
	// CutlassFP8MoE prices per-tensor FP8 fused-MoE layers that run
	// FlashInfer's CUTLASS MoE on Hopper by their CTA tiles
	// (moecutlasshopper.go); nil: FlashInferMoE's terms.
	CutlassFP8MoE *CutlassTileMoE
	// TritonMoE prices the fused-MoE layer as vLLM's Triton fused_experts
	// runs it (moetriton.go); nil: the MoE classes' curves.
	TritonMoE *TritonMoESet
	// TritonAttention prices attention as vLLM's Triton unified attention runs it
	// (tritonattn.go): the kernel vLLM takes where the device's default
	// kernels lack the head dim; nil: the default kernels' terms.
	TritonAttention *TritonAttn
}

// host returns the CUDA_EVENT host terms of operator op.
func (c *Curves) host(op string) HostTerms {
	if h, ok := c.Host[op]; ok {
		return h
	}
	k := c.Class[ClassOf(op)]
	return HostTerms{PreUs: k.HostPreUs, Us: k.HostUs}
}
