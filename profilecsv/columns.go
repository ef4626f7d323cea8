package profilecsv

import (
	"path/filepath"
	"slices"

	"github.com/ftk-dev/ftk/spec"
)

// The CSV layouts collect writes. Each file starts with the columns of the
// Frontier (or Vidur, for network files; docs/formats.md for cpu_overhead) file
// of the same family, in the same order, so readers of those formats read
// ours; collect's own columns follow at the end (ExtraColumns).

// opOrder is the order of operator columns per family, as in the Frontier
// files; a file has the columns of the operators its plan measures.
var opOrder = map[spec.Family][]string{
	spec.FamilyLinear: {spec.OpEmb, spec.OpInputLayernorm, spec.OpAttnPreProj, spec.OpAttnRope, spec.OpAttnPostProj,
		spec.OpPostAttnLayernorm, spec.OpMLPUpProj, spec.OpMLPAct, spec.OpMLPDownProj, spec.OpAdd,
		spec.OpSharedUpProj, spec.OpSharedAct, spec.OpSharedDownProj, spec.OpLMHead},
	spec.FamilyAttention: {spec.OpAttnInputReshape, spec.OpAttnKVCacheSave, spec.OpAttnPrefill, spec.OpAttnDecode, spec.OpAttnOutputReshape},
	spec.FamilyMoE:       {spec.OpMoEGatingLinear, spec.OpMoERoutingTopK, spec.OpMoEShuffling, spec.OpMoEGroupedGEMM},
}

var linearKeys = []string{"n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp", "use_qk_norm",
	"attn_output_gate", "num_tokens", "num_tensor_parallel_workers", "padded_n_embd", "padded_n_expanded_embd", "model_arch",
	"is_step2_mini", "share_expert_dim", "share_q_dim", "measurement_type", "profiling_precision", "quant_signature",
	"model_architecture_profile"}

var attentionKeys = []string{"n_embd", "n_q_head", "n_kv_head", "block_size", "num_tensor_parallel_workers", "max_model_len",
	"batch_size", "prefill_chunk_size", "kv_cache_size", "is_prefill", "attention_backend", "is_mixed_batch", "mode",
	"seq_lens", "total_tokens", "max_seq_len", "min_seq_len", "avg_seq_len", "equal_seq_len", "seq_len_variance",
	"seq_len_std", "seq_len_cv", "is_chunked_prefill_sample", "chunk_start_token", "chunk_end_token",
	"total_prefill_tokens", "profiling_precision", "model_arch", "quant_signature", "measurement_type",
	"model_architecture_profile", "prefill_seq_lens", "prefill_kv_cache_sizes", "decode_kv_cache_sizes",
	"num_prefill_seqs", "num_decode_seqs", "decode_batch_size", "total_batch_size", "total_decode_tokens",
	"decode_avg_kv_cache_size", "batch_composition_ratio", "is_true_mixed_batch",
	// collect's: the new tokens of the batch, the feature of the token-wise attention ops.
	"num_tokens"}

var moeKeys = []string{"num_tokens", "num_experts", "num_experts_per_device", "expert_parallel_size",
	"routing_runtime_path", "routing_assignment_policy", "routing_weight_policy", "routing_uses_router_logits",
	"gating_runtime_context", "gating_runtime_context_impl", "router_topk", "hidden_dim", "expert_hidden_dim",
	"use_gated", "num_tensor_parallel_workers", "total_routed_tokens", "model_expansion_ratio", "tokens_per_expert_avg",
	"tokens_to_experts_ratio", "expert_utilization", "min_load_ratio", "load_imbalance_cv", "max_load_ratio",
	"load_entropy", "load_gini_coefficient", "load_distribution", "seed", "moe_grouped_gemm_backend",
	"measurement_type", "profiling_precision", "model_arch", "quant_signature", "model_architecture_profile",
	// collect's: the grouped GEMM's second feature, the in-expert TP degree,
	// the EP rank measured and its per-expert token counts.
	"max_expert_tokens", "expert_tensor_parallel_size", "ep_rank", "expert_token_counts"}

// networkKeys follow the Vidur network files; the first, unnamed column is
// the row index as pandas writes it.
var networkKeys = []string{"rank", "num_workers", "size", "collective", "devices_per_node", "max_devices_per_node",
	// collect's: the layout's TP (EP dispatch/combine predictors are keyed by it).
	"num_tensor_parallel_workers", "measurement_type", "profiling_precision"}

// HostColumns is the CPU overhead schema of docs/formats.md, milliseconds.
var HostColumns = []string{"model_name", "batch_size", "tensor_parallel_degree", "num_prefill_tokens", "num_decode_tokens",
	"scheduling_mode", "schedule_mean", "schedule_median", "sampler_e2e_mean", "sampler_e2e_median",
	"prepare_inputs_e2e_mean", "prepare_inputs_e2e_median", "process_model_outputs_mean",
	"process_model_outputs_median", "ray_comm_time_mean", "measurement_type",
	// ftk's host issue costs (spec.IssueOps), one per kind: blank on the
	// step-composition rows, filled on the issue rows.
	"issue_call_mean", "issue_call_median", "issue_module_mean", "issue_module_median",
	"issue_aten_mean", "issue_aten_median", "issue_custom_mean", "issue_custom_median",
	"issue_triton_mean", "issue_triton_median", "issue_attention_mean", "issue_attention_median",
	"issue_collective_mean", "issue_collective_median", "issue_graph_mean", "issue_graph_median",
	"issue_layer_mean", "issue_layer_median"}

// HostOps are the operators of the CPU overhead format (docs/formats.md) and
// their column stems (<stem>_mean, <stem>_median), in the format's order.
var HostOps = []struct{ Stem, Op string }{
	{"schedule", spec.OpCPUSchedule},
	{"prepare_inputs_e2e", spec.OpCPUPrepareInputs},
	{"sampler_e2e", spec.OpCPUSampler},
	{"process_model_outputs", spec.OpCPUProcessOutputs},
	{"ray_comm_time", spec.OpCPURayComm},
	{"issue_call", spec.OpIssueCall},
	{"issue_module", spec.OpIssueModule},
	{"issue_aten", spec.OpIssueATen},
	{"issue_custom", spec.OpIssueCustom},
	{"issue_triton", spec.OpIssueTriton},
	{"issue_attention", spec.OpIssueAttention},
	{"issue_collective", spec.OpIssueCollective},
	{"issue_graph", spec.OpIssueGraph},
	{"issue_layer", spec.OpIssueLayer},
}

// HostStem returns the column stem of host operator op, or false.
func HostStem(op string) (string, bool) {
	for _, h := range HostOps {
		if h.Op == op {
			return h.Stem, true
		}
	}
	return "", false
}

// ExtraColumns close every file: where the row came from. profiling_backend
// is "synthetic" for rows of the device model; shape_id keys resume; the
// GPU telemetry columns are blank without NVML.
var ExtraColumns = []string{"profiling_backend", "impl", "device", "model_name", "shape_id",
	"sm_clock_mhz", "mem_clock_mhz", "temperature_c", "power_w", "clock_event_reasons", "remeasured"}

// StatNames are the per-operator statistics columns
// (time_stats.<op>.<stat>), in file order; the first five are required.
var StatNames = [...]string{"min", "max", "mean", "median", "std", "count"}

// TimeColumns returns the time_stats.<op>.* columns of ops.
func TimeColumns(ops []string) []string {
	out := make([]string, 0, 6*len(ops))
	for _, o := range ops {
		for _, s := range StatNames {
			out = append(out, "time_stats."+o+"."+s)
		}
	}
	return out
}

// File names one profile file: a family (and, for collectives, the
// collective) under one measurement type.
type File struct {
	Family      spec.Family
	Collective  string
	Measurement string
}

// FileSuffix maps measurement types to file name suffixes (docs/formats.md:
// <family>.csv is CUDA_EVENT, <family>_kernel_only.csv KERNEL_ONLY).
func FileSuffix(measurement string) string {
	switch measurement {
	case spec.KernelOnly:
		return "_kernel_only"
	case spec.CPUTime:
		return "_cpu"
	}
	return ""
}

// RelPath is the file's path inside the sweep folder.
func (k File) RelPath() string {
	switch k.Family {
	case spec.FamilyCollective:
		return filepath.Join("network", k.Collective+FileSuffix(k.Measurement)+".csv")
	case spec.FamilyCPU:
		// HOST_WALL rows; host issue costs timed on a CPU (the Python and
		// dispatcher part only) go to cpu_overhead_cpu.csv.
		return "cpu_overhead" + FileSuffix(k.Measurement) + ".csv"
	}
	return string(k.Family) + FileSuffix(k.Measurement) + ".csv"
}

// Header returns the columns of the file; ops are the operators the plan
// measures in it.
func (k File) Header(ops []string) []string {
	var h []string
	switch k.Family {
	case spec.FamilyLinear:
		h = append(TimeColumns(ordered(k.Family, ops)), linearKeys...)
	case spec.FamilyAttention:
		h = append(TimeColumns(ordered(k.Family, ops)), attentionKeys...)
	case spec.FamilyMoE:
		h = append(TimeColumns(ordered(k.Family, ops)), moeKeys...)
	case spec.FamilyCollective:
		h = append([]string{""}, TimeColumns([]string{k.Collective})...)
		h = append(h, networkKeys...)
	case spec.FamilyCPU:
		h = append([]string(nil), HostColumns...)
	}
	for _, c := range ExtraColumns {
		if !slices.Contains(h, c) {
			h = append(h, c)
		}
	}
	return h
}

// ordered returns ops in the family's column order.
func ordered(f spec.Family, ops []string) []string {
	var out []string
	for _, o := range opOrder[f] {
		if slices.Contains(ops, o) {
			out = append(out, o)
		}
	}
	for _, o := range ops { // operators the catalog adds later go last
		if !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}
