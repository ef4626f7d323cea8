package roofline

import "github.com/ftk-dev/ftk/spec"

// What vLLM's Python issues for each catalog operator (docs/design.md section 2,
// the host timeline). Every op of LayerOps and ModelOps is one or more
// module calls (nn.Module.__call__ and vLLM's CustomOp dispatch), dispatcher
// calls that launch no kernel (views, splits, torch.empty) and GPU kernels
// of one of five kinds. The counts were read from vLLM's V1 source (the
// VLLMSource files below), per architecture, for an eager (--enforce-eager)
// BF16 forward pass with the FlashAttention backend (FlashMLA for MLA):
//
//   - input_layernorm / post_attention_layernorm: RMSNorm.forward_cuda ->
//     torch.ops._C.fused_add_rms_norm, one custom kernel
//     (vllm/model_executor/layers/layernorm.py, RMSNorm.forward_cuda).
//   - attn_pre_proj / attn_post_proj / mlp_*_proj / shared experts:
//     QKVParallelLinear, MergedColumnParallelLinear, RowParallelLinear ->
//     UnquantizedLinearMethod.apply -> F.linear, one ATen (cuBLAS) GEMM
//     (vllm/model_executor/layers/linear.py); the qkv split is a view.
//   - attn_rope: RotaryEmbedding.forward_cuda -> torch.ops._C.rotary_embedding,
//     one custom kernel; Qwen3 adds q_norm and k_norm, two RMSNorm custom
//     kernels on head views (qwen3_moe.py, Qwen3MoeAttention.forward, at
//     002456df); DeepSeek's YaRN rope goes through FlashInfer's rotary
//     kernel (deepseek_scaling_rope.py, forward_cuda, at 00d678e1).
//   - attention: Attention.forward -> torch.ops.vllm.unified_attention_with_output
//     -> FlashAttentionImpl.forward: reshape_and_cache_flash (custom) and
//     flash_attn_varlen_func (attention kernel), one call for the whole
//     mixed batch (vllm/attention/layer.py, vllm/v1/attention/backends/flash_attn.py).
//     The wrapper cost is booked on attn_input_reshape, which every step runs;
//     attn_prefill and attn_decode carry only GPU time. MLA runs prefill and
//     decode separately (vllm/v1/attention/backends/mla/common.py,
//     MLACommonImpl.forward): decode is a bmm with W_UK_T, a cat, the FlashMLA
//     kernel and a bmm with W_UV; prefill up-projects the latent with
//     kv_b_proj, splits and runs varlen flash attention.
//   - all_reduce: tensor_model_parallel_all_reduce -> torch.ops.vllm.all_reduce,
//     vLLM's custom all-reduce or pynccl, one collective kernel
//     (vllm/distributed/communication_op.py, parallel_state.py).
//   - MoE (FusedMoE.forward -> torch.ops.vllm.moe_forward, fused_moe/layer.py):
//     the router GEMM (ReplicatedLinear, ATen); fused_topk ->
//     torch.ops._moe_C.topk_softmax (custom) and, with renormalize, a sum and
//     a division (ATen); DeepSeek's grouped_topk is plain torch (about ten
//     ATen kernels: sigmoid, bias add, two top-k, sums, scatter, masked_fill,
//     gather, division, scaling). fused_experts_impl (fused_moe.py, at
//     000d1458) then per chunk: moe_align_block_size (custom), two
//     invoke_fused_moe_kernel Triton launches, torch.ops._C.silu_and_mul and
//     ops.moe_sum (custom), with four torch.empty/view calls.
//   - emb: VocabParallelEmbedding, F.embedding (ATen); at TP > 1 it masks
//     the ids (four ATen ops) and all-reduces.
//   - lm_head_linear: the final norm (custom), LogitsProcessor -> F.linear
//     (ATen) and, at TP > 1, a gather (collective).
//
// Counts are per op per layer; a step multiplies them by the stage's
// layers (cost.timeline precomputes those sums once per run).

// VLLMSource names the vLLM source the inventory was read from: vLLM V1
// (the 0.10-0.11 series, 2025), files at the commits named above. Newer
// releases fuse more (e.g. a CUDA grouped_topk); collect host measures the
// installed version instead.
const VLLMSource = "vLLM V1 0.10-0.11 series (qwen3_moe.py@002456df, fused_moe.py@000d1458, deepseek_scaling_rope.py@00d678e1)"

// with returns o plus n kernels of kind k.
func with(o spec.OpIssue, k spec.KernelKind, n int) spec.OpIssue {
	o.Kernels[k] += n
	return o
}

func issue(modules, calls int, kinds ...int) spec.OpIssue {
	o := spec.OpIssue{Modules: modules, Calls: calls}
	copy(o.Kernels[:], kinds)
	return o
}

// IssueOf returns what vLLM issues for op o of model m under layout l (see
// the inventory above).
func IssueOf(m *spec.Model, l spec.Layout, o *spec.Op) spec.OpIssue {
	l = l.Normalize()
	//            modules calls  aten custom triton attn coll
	switch o.Name {
	case spec.OpInputLayernorm:
		return issue(2, 0, 0, 1) // decoder layer + RMSNorm
	case spec.OpPostAttnLayernorm:
		return issue(1, 0, 0, 1)
	case spec.OpAttnPreProj:
		if m.IsMLA() {
			// fused q_a/kv_a projection, split, q_a_layernorm, q_b_proj,
			// kv_a_layernorm, views.
			return issue(5, 4, 2, 2)
		}
		return issue(2, 1, 1) // attention module + QKV linear, split
	case spec.OpAttnRope:
		if m.QKNorm {
			return issue(3, 4, 0, 3) // q_norm, k_norm, rotary; four views
		}
		if m.IsMLA() {
			return issue(1, 2, 0, 1) // FlashInfer rotary on q_pe, k_pe
		}
		return issue(1, 0, 0, 1)
	case spec.OpAttnInputReshape:
		// Attention.forward: output torch.empty and q/k/v views, then the
		// unified_attention_with_output wrapper and the backend kernel.
		if m.IsMLA() {
			return issue(1, 4, 0, 0, 0, 1)
		}
		return issue(1, 4, 0, 0, 0, 1)
	case spec.OpAttnKVCacheSave:
		return issue(0, 0, 0, 1) // reshape_and_cache_flash / concat_and_cache_mla
	case spec.OpAttnPrefill:
		if m.IsMLA() {
			return issue(1, 3, 2) // kv_b_proj GEMM, split, cat
		}
		return spec.OpIssue{}
	case spec.OpAttnDecode:
		if m.IsMLA() {
			return issue(0, 2, 3) // bmm W_UK_T, cat, bmm W_UV
		}
		return spec.OpIssue{}
	case spec.OpAttnOutputReshape:
		return issue(0, 1)
	case spec.OpAttnPostProj, spec.OpMLPDownProj, spec.OpSharedDownProj:
		return issue(1, 0, 1)
	case spec.OpMLPUpProj, spec.OpSharedUpProj:
		return issue(2, 0, 1) // MLP module + merged gate/up linear
	case spec.OpMLPAct, spec.OpSharedAct:
		return issue(1, 1, 0, 1) // SiluAndMul: empty + silu_and_mul
	case spec.OpAllReduce, spec.OpEPDispatch, spec.OpEPCombine:
		return issue(0, 1, 0, 0, 0, 0, 1)
	case spec.OpSendRecv:
		return ppSendIssue(l)
	case spec.OpMoEGatingLinear:
		return issue(2, 1, 1) // sparse block + router linear, view
	case spec.OpMoERoutingTopK:
		if numExpertGroups(m) > 1 {
			// grouped_topk in plain torch, then routed scaling.
			return issue(1, 6, 11)
		}
		// moe_forward op, three torch.empty, topk_softmax, renormalize.
		return issue(1, 4, 2, 1)
	case spec.OpMoEShuffling:
		is := issue(0, 3, 0, 1) // moe_align_block_size and its buffers
		if l.EP > 1 {
			is = with(is, spec.KernelATen, 1) // expert_map[topk_ids]
		}
		return is
	case spec.OpMoEGroupedGEMM:
		is := issue(0, 4, 0, 2, 2) // silu_and_mul, moe_sum; two fused_moe_kernel
		if m.SharedExperts > 0 {
			is = with(is, spec.KernelATen, 2) // routed scaling + shared add
		}
		return is
	case spec.OpEmb:
		if l.TP > 1 {
			return issue(1, 0, 5) // mask ids, embedding, masked_fill
		}
		return issue(1, 0, 1)
	case spec.OpLMHead:
		is := issue(2, 1, 1, 1) // final norm, logits linear, slice
		if l.TP > 1 {
			is = with(is, spec.KernelCollective, 1)
		}
		return is
	}
	return issue(0, 0, o.Kernels)
}

// numExpertGroups reports DeepSeek-style grouped routing: models with
// multi-head latent attention and many routed experts route through
// grouped_topk in vLLM (DeepseekV2MoE passes use_grouped_topk=True).
func numExpertGroups(m *spec.Model) int {
	if m.IsMLA() && m.IsMoE() {
		return 8
	}
	return 1
}

// The activations between pipeline stages (vllm/distributed/parallel_state.py,
// GroupCoordinator.send_tensor_dict and recv_tensor_dict, at 0c175ae9;
// v1/worker/gpu_worker.py, Worker.execute_model): a stage before the last
// returns IntermediateTensors of two tensors, hidden_states and residual
// (make_empty_intermediate_tensors_factory in qwen3_moe.py, llama.py and
// the other decoder models). The sender pickles their metadata and sends
// it over the CPU group (send_object), then sends each tensor over NCCL,
// at TP > 1 only its rank's slice (a view). The receiver takes the
// metadata (recv_object), allocates each tensor (torch.empty), receives it
// over NCCL and, at TP > 1, all-gathers the slices over the TP group and
// reshapes them. The metadata exchange is counted as one dispatcher call
// each way: its gloo send/receive cost is not measured (guess).
const ppTensors = 2

// ppSendIssue is what the sending stage issues for the activations.
func ppSendIssue(l spec.Layout) spec.OpIssue {
	is := with(issue(0, 1), spec.KernelCollective, ppTensors)
	if l.TP > 1 {
		is.Calls += ppTensors // the slice views
	}
	return is
}

// PPRecvIssue is what a stage after the first issues to receive the
// activations, before its own layers (see ppSendIssue).
func PPRecvIssue(l spec.Layout) spec.OpIssue {
	l = l.Normalize()
	is := with(issue(0, 1+ppTensors), spec.KernelCollective, ppTensors)
	if l.TP > 1 {
		is.Calls += ppTensors // reshape of the gathered tensor
		is = with(is, spec.KernelCollective, ppTensors)
	}
	return is
}
