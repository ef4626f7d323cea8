package spec

import "fmt"

// Family groups operators the way profiling files do: one file per family
// and measurement type.
type Family string

const (
	FamilyLinear     Family = "linear_op"
	FamilyAttention  Family = "attention"
	FamilyMoE        Family = "moe"
	FamilyCollective Family = "collective"
	FamilyCPU        Family = "cpu_overhead"
)

// Operator names, as in the profiling formats (docs/formats.md).
const (
	OpEmb               = "emb"
	OpInputLayernorm    = "input_layernorm"
	OpAttnPreProj       = "attn_pre_proj"
	OpAttnRope          = "attn_rope"
	OpAttnPostProj      = "attn_post_proj"
	OpPostAttnLayernorm = "post_attention_layernorm"
	OpMLPUpProj         = "mlp_up_proj"
	OpMLPAct            = "mlp_act"
	OpMLPDownProj       = "mlp_down_proj"
	OpAdd               = "add"
	OpSharedUpProj      = "share_expert_up_proj"
	OpSharedAct         = "share_expert_act"
	OpSharedDownProj    = "share_expert_down_proj"
	OpLMHead            = "lm_head_linear"

	OpAttnInputReshape  = "attn_input_reshape"
	OpAttnKVCacheSave   = "attn_kv_cache_save"
	OpAttnPrefill       = "attn_prefill"
	OpAttnDecode        = "attn_decode"
	OpAttnOutputReshape = "attn_output_reshape"

	OpMoEGatingLinear = "moe_gating_linear"
	OpMoERoutingTopK  = "moe_gating_routing_topk"
	OpMoEShuffling    = "moe_shuffling"
	OpMoEGroupedGEMM  = "moe_grouped_gemm"

	OpAllReduce = "all_reduce"
	OpSendRecv  = "send_recv"
	// OpEPDispatch and OpEPCombine move tokens to and from the EP ranks that
	// hold their experts (an all-to-all, or all-gather / reduce-scatter).
	OpEPDispatch = "ep_dispatch"
	OpEPCombine  = "ep_combine"

	OpCPUOverhead = "cpu_overhead"
)

// Feature names: the dataset columns a predictor of each operator reads.
const (
	FeatNumTokens         = "num_tokens"
	FeatKVCacheSize       = "kv_cache_size"      // context tokens already cached (per sequence)
	FeatPrefillChunkSize  = "prefill_chunk_size" // new prompt tokens of the prefill
	FeatBatchSize         = "batch_size"         // decode sequences
	FeatTotalRoutedTokens = "total_routed_tokens"
	FeatMaxExpertTokens   = "max_expert_tokens" // tokens of the most loaded local expert
	FeatSizeBytes         = "size_bytes"
	FeatNumPrefillTokens  = "num_prefill_tokens"
	FeatNumDecodeTokens   = "num_decode_tokens"
)

// OpFeatures returns the base features of operator op, in order. Every
// operator not named below is a token-wise op with the single feature
// num_tokens.
func OpFeatures(op string) []string {
	switch op {
	case OpAttnPrefill:
		return []string{FeatKVCacheSize, FeatPrefillChunkSize}
	case OpAttnDecode:
		return []string{FeatBatchSize, FeatKVCacheSize}
	case OpMoEGroupedGEMM:
		return []string{FeatTotalRoutedTokens, FeatMaxExpertTokens}
	case OpAllReduce, OpSendRecv, OpEPDispatch, OpEPCombine:
		return []string{FeatSizeBytes}
	}
	if IsHostOp(op) {
		return []string{FeatBatchSize, FeatNumPrefillTokens, FeatNumDecodeTokens}
	}
	return []string{FeatNumTokens}
}

// OpFamily returns the family an operator's profiles live in.
func OpFamily(op string) Family {
	switch op {
	case OpAttnInputReshape, OpAttnKVCacheSave, OpAttnPrefill, OpAttnDecode, OpAttnOutputReshape:
		return FamilyAttention
	case OpMoEGatingLinear, OpMoERoutingTopK, OpMoEShuffling, OpMoEGroupedGEMM:
		return FamilyMoE
	case OpAllReduce, OpSendRecv, OpEPDispatch, OpEPCombine:
		return FamilyCollective
	}
	if IsHostOp(op) {
		return FamilyCPU
	}
	return FamilyLinear
}

// Op is one operator of a layer with its per-GPU shape.
type Op struct {
	Name   string
	Family Family
	// Kernels is the number of GPU kernels the op launches in eager mode.
	Kernels int
	// K and N are the per-GPU GEMM dimensions (tokens x K times K x N);
	// N == 0 for non-GEMM ops.
	K, N int
	// Width is the elements per token an element-wise op touches.
	Width int
	// Attention heads and head size on this GPU (attention ops).
	QHeads, KVHeads, HeadDim int
	// MoE: experts on this GPU, top-k, and the per-GPU expert width;
	// Experts is the layer's routed experts on all GPUs (moe_shuffling:
	// vLLM aligns the global expert ids, roofline/moealign.go).
	LocalExperts, TopK, ExpertWidth int
	Experts                         int
	// Workers is the group size of a collective; CrossNode says the group
	// spans nodes (one device per node), so it runs over the network.
	Workers   int
	CrossNode bool
	// DPRanks is the data-parallel ranks among the Workers of EP dispatch
	// and combine; Backend is their all2all backend (vLLM's name; empty:
	// naive).
	DPRanks int
	Backend string
	// ElemBytes is bytes per activation / weight element.
	ElemBytes int
	// FP8 says a GEMM runs on FP8 tensor cores (W8A8 FP8 weights).
	FP8 bool
	// CutlassMoE says an FP8 MoE layer (its grouped GEMM and alignment)
	// runs vLLM's CUTLASS MoE kernel, not the fused-MoE Triton one
	// (roofline/fp8moe.go) nor FlashInfer's (roofline/moecutlasshopper.go).
	CutlassMoE bool
	// FP8Block says FP8 weights are quantized in blocks and activations per
	// token group (Model.FP8Block).
	FP8Block bool
	// FP8StaticScales says per-tensor FP8 activations take static scales
	// (Model.FP8StaticScales).
	FP8StaticScales bool
	// NonGatedExperts says a grouped GEMM's experts project once before
	// their activation (Nemotron-H's relu2), not twice (gate and up).
	NonGatedExperts bool
	// UniformRouting says top-k routing runs the profilers' round-robin
	// path (one kernel per expert choice, RoutingPathUniform), not vLLM's
	// fused top-k (roofline.Roofline).
	UniformRouting bool
}

// Shape renders the per-GPU shape for people.
func (o *Op) Shape() string {
	switch {
	case o.Name == OpMoEGroupedGEMM:
		return fmt.Sprintf("%d experts x [R,%d]x[%d,%d]", o.LocalExperts, o.K, o.K, o.ExpertWidth)
	case o.N > 0:
		return fmt.Sprintf("[T,%d]x[%d,%d]", o.K, o.K, o.N)
	case o.Family == FamilyAttention:
		return fmt.Sprintf("q_heads=%d kv_heads=%d head_dim=%d", o.QHeads, o.KVHeads, o.HeadDim)
	case o.Family == FamilyCollective:
		return fmt.Sprintf("[T,%d] over %d GPUs", o.Width, o.Workers)
	case o.Width > 0:
		return fmt.Sprintf("[T,%d]", o.Width)
	}
	return "-"
}
