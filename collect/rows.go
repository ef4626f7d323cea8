package collect

import (
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// result is one shape measured under one measurement type: a row.
type result struct {
	shape       *Shape
	measurement string
	resp        map[string]*Response // by operator
	gpu         gpuRecord
	remeasured  int
}

// rowMaker renders results as rows of the sweep's files.
type rowMaker struct {
	model     *spec.Model
	limits    spec.EngineLimits
	device    string // the sweep's device label
	backend   string // synthetic or torch
	precision string // BF16, FP8, FP32
}

// row returns the values of r under header; index numbers rows of the
// network files (their first, unnamed column).
func (rm *rowMaker) row(r *result, header []string, index int) []string {
	v := rm.values(r)
	v[""] = strconv.Itoa(index)
	out := make([]string, len(header))
	for i, c := range header {
		out[i] = v[c]
	}
	return out
}

func (rm *rowMaker) values(r *result) map[string]string {
	m, s := rm.model, r.shape
	v := map[string]string{
		"measurement_type":            r.measurement,
		"profiling_precision":         rm.precision,
		"quant_signature":             "none",
		"model_arch":                  "generic",
		"model_architecture_profile":  "generic",
		"profiling_backend":           rm.backend,
		"device":                      rm.device,
		"model_name":                  m.Name,
		"shape_id":                    s.ID,
		"remeasured":                  itoa(r.remeasured),
		"num_tensor_parallel_workers": itoa(s.Layout.TP),
	}
	if m.WeightBytes == 1 {
		v["quant_signature"] = "fp8"
	}
	impls := map[string]bool{}
	for op, resp := range r.resp {
		st := resp.Stats
		p := "time_stats." + op + "."
		v[p+"min"], v[p+"max"], v[p+"mean"] = ftoa(st.Min), ftoa(st.Max), ftoa(st.Mean)
		v[p+"median"], v[p+"std"], v[p+"count"] = ftoa(st.Median), ftoa(st.Std), itoa(st.Count)
		impls[resp.Impl] = true
	}
	v["impl"] = joinKeys(impls)
	r.gpu.fill(v)
	switch s.Family {
	case spec.FamilyLinear:
		rm.linearValues(v, s)
	case spec.FamilyAttention:
		rm.attentionValues(v, r)
	case spec.FamilyMoE:
		rm.moeValues(v, r)
	case spec.FamilyCollective:
		v["rank"], v["num_workers"], v["size"] = "0", itoa(s.Workers), strconv.FormatInt(s.SizeBytes, 10)
		v["collective"], v["devices_per_node"], v["max_devices_per_node"] = s.Collective, itoa(s.Workers), "8"
	case spec.FamilyCPU:
		rm.hostValues(v, r)
	}
	return v
}

func (rm *rowMaker) linearValues(v map[string]string, s *Shape) {
	m := rm.model
	expanded := m.IntermediateSize
	if m.IsMoE() && m.FirstDenseLayers == 0 {
		expanded = m.MoEIntermediateSize
	}
	v["n_head"], v["n_kv_head"], v["n_embd"] = itoa(m.NumHeads), itoa(m.NumKVHeads), itoa(m.HiddenSize)
	v["n_expanded_embd"], v["padded_n_expanded_embd"], v["padded_n_embd"] = itoa(expanded), itoa(expanded), itoa(m.HiddenSize)
	v["vocab_size"], v["use_gated_mlp"], v["use_qk_norm"] = itoa(m.VocabSize), pybool(m.GatedMLP), pybool(m.QKNorm)
	v["attn_output_gate"], v["is_step2_mini"], v["num_tokens"] = "False", "False", itoa(s.Tokens)
	if m.SharedExperts > 0 {
		w := m.SharedExpertIntermediateSize
		if w == 0 {
			w = m.MoEIntermediateSize
		}
		v["share_expert_dim"] = itoa(w * m.SharedExperts)
	}
}

// attentionValues fills the Frontier attention keys. Single prefills and
// equal-context decodes fill batch_size, prefill_chunk_size and
// kv_cache_size as they stand; batches of several prefills
// (is_mixed_batch) and true mixed batches keep those at 0, as Frontier
// does, and describe their sequences in the list columns.
func (rm *rowMaker) attentionValues(v map[string]string, r *result) {
	m, s := rm.model, r.shape
	v["n_embd"], v["n_q_head"], v["n_kv_head"] = itoa(m.HiddenSize), itoa(m.NumHeads), itoa(m.NumKVHeads)
	v["block_size"], v["max_model_len"] = itoa(attentionBlockSize), itoa(rm.limits.MaxModelLen)
	v["attention_backend"] = "SYNTHETIC_ROOFLINE"
	if resp := r.resp[spec.OpAttnPrefill]; resp != nil {
		v["attention_backend"] = strings.ToUpper(resp.Impl)
	} else if resp := r.resp[spec.OpAttnDecode]; resp != nil {
		v["attention_backend"] = strings.ToUpper(resp.Impl)
	}
	v["num_tokens"], v["total_tokens"] = itoa(s.Tokens), itoa(s.Tokens)
	v["is_mixed_batch"], v["is_true_mixed_batch"], v["mode"] = "False", "", "even"
	v["is_chunked_prefill_sample"], v["chunk_start_token"], v["chunk_end_token"], v["total_prefill_tokens"] = "False", "0", "0", "0"
	v["prefill_chunk_size"], v["kv_cache_size"] = "0", "0"
	var seqLens []int
	switch s.Kind {
	case KindDecode:
		v["is_prefill"], v["batch_size"], v["kv_cache_size"] = "False", itoa(len(s.DecodeContexts)), itoa(s.DecodeContexts[0])
		seqLens = repeat(1, len(s.DecodeContexts))
	case KindPrefill:
		c, k := s.PrefillChunks[0], s.PrefillContexts[0]
		v["is_prefill"], v["batch_size"], v["prefill_chunk_size"], v["kv_cache_size"] = "True", "1", itoa(c), itoa(k)
		v["is_chunked_prefill_sample"], v["chunk_start_token"] = pybool(k > 0), itoa(k)
		v["chunk_end_token"], v["total_prefill_tokens"] = itoa(k+c), itoa(k+c)
		seqLens = s.PrefillChunks
	case KindMultiPrefill:
		v["is_prefill"], v["batch_size"], v["is_mixed_batch"] = "True", itoa(len(s.PrefillChunks)), "True"
		seqLens = s.PrefillChunks
	case KindTrueMixed:
		np, nd := len(s.PrefillChunks), len(s.DecodeContexts)
		sumPre, sumCtx := 0, 0
		for _, c := range s.PrefillChunks {
			sumPre += c
		}
		for _, k := range s.DecodeContexts {
			sumCtx += k
		}
		v["is_prefill"], v["batch_size"], v["mode"], v["is_true_mixed_batch"] = "True", itoa(np+nd), "true_mixed", "True"
		v["total_prefill_tokens"] = itoa(sumPre)
		v["prefill_seq_lens"], v["prefill_kv_cache_sizes"] = pylist(s.PrefillChunks), pylist(s.PrefillContexts)
		v["decode_kv_cache_sizes"], v["num_prefill_seqs"], v["num_decode_seqs"] = pylist(s.DecodeContexts), itoa(np), itoa(nd)
		v["decode_batch_size"], v["total_batch_size"], v["total_decode_tokens"] = itoa(nd), itoa(np+nd), itoa(nd)
		v["decode_avg_kv_cache_size"] = ftoa(float64(sumCtx) / float64(nd))
		v["batch_composition_ratio"] = ftoa(float64(np) / float64(np+nd))
		v["is_true_mixed_batch"] = "True"
	}
	if seqLens != nil {
		n := float64(len(seqLens))
		var sum, sq float64
		lo, hi := seqLens[0], seqLens[0]
		for _, x := range seqLens {
			sum += float64(x)
			sq += float64(x) * float64(x)
			lo, hi = min(lo, x), max(hi, x)
		}
		mean := sum / n
		variance := sq/n - mean*mean
		if variance < 0 {
			variance = 0
		}
		v["seq_lens"], v["max_seq_len"], v["min_seq_len"] = pylist(seqLens), itoa(hi), itoa(lo)
		v["avg_seq_len"], v["equal_seq_len"] = ftoa(mean), itoa(int(math.Sqrt(sq)))
		v["seq_len_variance"], v["seq_len_std"], v["seq_len_cv"] = ftoa(variance), ftoa(math.Sqrt(variance)), ftoa(math.Sqrt(variance)/mean)
	}
}

// Routing contract columns of the two routing paths.
var routingPolicies = map[string][3]string{
	RoutingStandard: {"router_logits_topk", "softmax_topk_renormalized", "True"},
	RoutingUniform:  {"round_robin_uniform", "uniform_1_over_topk", "False"},
}

func (rm *rowMaker) moeValues(v map[string]string, r *result) {
	m, s := rm.model, r.shape
	st := s.Load.Stats()
	pol := routingPolicies[s.RoutingPath]
	v["num_tokens"], v["num_experts"], v["num_experts_per_device"] = itoa(s.Tokens), itoa(m.NumExperts), itoa(len(s.Load.Counts))
	v["expert_parallel_size"], v["routing_runtime_path"] = itoa(s.Layout.EP), s.RoutingPath
	v["routing_assignment_policy"], v["routing_weight_policy"], v["routing_uses_router_logits"] = pol[0], pol[1], pol[2]
	v["gating_runtime_context"], v["gating_runtime_context_impl"] = s.GatingContext, "none"
	if s.GatingContext == spec.GatingPrefillHot {
		v["gating_runtime_context_impl"] = "ffn_like_prefix_20x"
	}
	v["router_topk"], v["hidden_dim"], v["expert_hidden_dim"] = itoa(m.TopK), itoa(m.HiddenSize), itoa(m.MoEIntermediateSize)
	v["use_gated"], v["total_routed_tokens"] = pybool(m.GatedMLP), itoa(st.Routed)
	v["model_expansion_ratio"] = ftoa(float64(m.MoEIntermediateSize) / float64(m.HiddenSize))
	v["tokens_per_expert_avg"], v["tokens_to_experts_ratio"] = ftoa(st.AvgPerExp), ftoa(st.AvgPerExp)
	v["expert_utilization"], v["min_load_ratio"], v["load_imbalance_cv"] = ftoa(st.Utilization), ftoa(st.MinRatio), ftoa(st.CV)
	v["max_load_ratio"], v["load_entropy"], v["load_gini_coefficient"] = ftoa(st.MaxRatio), ftoa(st.EntropyBits), ftoa(st.Gini)
	v["load_distribution"], v["seed"] = s.Distribution, strconv.FormatUint(s.LoadSeed, 10)
	if resp := r.resp[spec.OpMoEGroupedGEMM]; resp != nil {
		v["moe_grouped_gemm_backend"] = resp.Impl
	}
	v["max_expert_tokens"], v["expert_tensor_parallel_size"] = itoa(s.Load.MaxExpert()), itoa(s.Layout.MoETP())
	v["ep_rank"], v["expert_token_counts"] = itoa(s.Load.Rank), pylist(s.Load.Counts)
}

func (rm *rowMaker) hostValues(v map[string]string, r *result) {
	s := r.shape
	v["batch_size"], v["tensor_parallel_degree"] = itoa(s.BatchSize), itoa(s.Layout.TP)
	v["num_prefill_tokens"], v["num_decode_tokens"], v["scheduling_mode"] = itoa(s.PrefillTokens), itoa(s.DecodeTokens), "sync"
	for op, resp := range r.resp {
		if c, ok := profilecsv.HostStem(op); ok {
			v[c+"_mean"], v[c+"_median"] = ftoa(resp.Stats.Mean), ftoa(resp.Stats.Median)
		}
	}
	if _, ok := r.resp[spec.OpCPURayComm]; !ok {
		v["ray_comm_time_mean"] = "0"
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// ftoa writes a float in the shortest form that reads back exactly.
func ftoa(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func pybool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// pylist writes a list cell as Python prints a list: [1, 2, 3].
func pylist(xs []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(x))
	}
	b.WriteByte(']')
	return b.String()
}

func joinKeys(set map[string]bool) string {
	keys := make([]string, 0, len(set))
	for k := range set {
		if k != "" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, "+")
}
