package cost

import (
	"math"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/kerneldb"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// KernelError is the built-in device model's error against one group of
// measured kernel-table rows: one table, dtype and kernel source.
type KernelError struct {
	Table, Dtype, KernelSource string
	Rows                       int
	// MAPE is the mean absolute percentage error of the device model's
	// time against the measured one; Bias the mean signed error (positive:
	// the model is slow), both in percent.
	MAPE, Bias float64
}

// RooflineVsTable prices every row of t with the built-in device model
// (roofline.Roofline on device d, KERNEL_ONLY, compiled as vLLM runs it) as
// the simulator would price that kernel, and returns the error per dtype
// and kernel source. The mapping: a gemm row is a linear op of (M; N, K)
// in BF16 or FP8 (fp8, fp8_block) on FP8 tensor cores, plus, for the FP8
// rows whose collector's activation quantization is known
// (roofline.LookupFP8QuantPath), that quantization, which the rows time
// with the GEMM, and for rows timed eagerly the host's call
// (roofline.Roofline.RowUs); an attention
// row is priced by AttentionRowMs; a balanced moe row is the
// fused-MoE layer as the simulator splits it, moe_shuffling (the
// alignment) plus moe_grouped_gemm at tokens x top-k / EP routed tokens,
// or, for a Blackwell row that ran FlashInfer's kernels, as
// FlashInferMoERowMs prices it;
// a CUDA-graph custom all-reduce row is all_reduce of message_size bf16
// elements. Rows of other dtypes (nvfp4, int4, mxfp4), sliding-window
// attention, skewed routing and eager all-reduce are left out.
func RooflineVsTable(t *kerneldb.Table, d *spec.Device) []KernelError {
	r := roofline.Roofline{Device: roofline.NewDevice(d), Compiled: true, CollectivesAligned: true}
	type acc struct {
		n         int
		ape, bias float64
	}
	groups := map[[3]string]*acc{}
	add := func(table, dtype, source string, measured, model float64) {
		k := [3]string{table, dtype, source}
		a := groups[k]
		if a == nil {
			a = &acc{}
			groups[k] = a
		}
		e := (model - measured) / measured * 100
		a.n++
		a.ape += math.Abs(e)
		a.bias += e
	}
	for _, g := range t.GEMM {
		fp8 := false
		switch g.Dtype {
		case "bfloat16", "float16":
		case "fp8", "fp8_block":
			fp8 = true
		default:
			continue
		}
		var ms float64
		if fp8 {
			ms = FP8GEMMRowMs(r, &g)
		} else {
			ms = BF16GEMMRowMs(r, &g)
		}
		if q, ok := roofline.LookupFP8QuantPath(g.Version, g.Dtype, g.KernelSource, d.Name); ok && fp8 {
			ms = r.RowUs(q, ms*1e3, float64(g.M), float64(g.K)) / 1e3
		}
		add(t.Name, g.Dtype, g.KernelSource, g.LatencyMs, ms)
	}
	for _, a := range t.Attention {
		if a.WindowSize > 0 || a.AttnDtype != "bfloat16" {
			continue
		}
		eb := 2
		switch a.KVCacheDtype {
		case "bfloat16", "float16":
		case "fp8":
			eb = 1
		default:
			continue
		}
		add(t.Name, a.KVCacheDtype, a.KernelSource, a.LatencyMs, AttentionRowMs(r, &a, eb))
	}
	for _, m := range t.MoE {
		if m.Distribution != "balanced" {
			continue
		}
		if ms, ok := FlashInferMoERowMs(r, &m); ok {
			add(t.Name, m.Dtype, m.KernelSource, m.LatencyMs, ms)
			continue
		}
		switch m.Dtype {
		case "bfloat16", "float16", "fp8", "fp8_block":
		default:
			continue
		}
		add(t.Name, m.Dtype, m.KernelSource, m.LatencyMs, MoERowMs(r, &m))
	}
	for _, a := range t.AllReduce {
		if !a.Graph || a.Dtype != "bfloat16" {
			continue
		}
		o := spec.Op{Name: spec.OpAllReduce, Family: spec.FamilyCollective, Kernels: 1, Workers: a.GPUs, ElemBytes: 2}
		add(t.Name, a.Dtype, a.KernelSource, a.LatencyMs, r.TimeMs(&o, []float64{float64(a.MessageSize) * 2}, spec.KernelOnly))
	}
	out := make([]KernelError, 0, len(groups))
	for k, a := range groups {
		out = append(out, KernelError{Table: k[0], Dtype: k[1], KernelSource: k[2], Rows: a.n, MAPE: a.ape / float64(a.n), Bias: a.bias / float64(a.n)})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return strings.Join([]string{a.Table, a.Dtype, a.KernelSource}, "\x00") < strings.Join([]string{b.Table, b.Dtype, b.KernelSource}, "\x00")
	})
	return out
}

// AttentionRowMs prices one attention row of AIConfigurator's tables (KV
// cache elements of eb bytes) with device model r as the simulator prices
// what the row times: one layer's FlashAttentionImpl.forward, which writes
// the new tokens' K and V into the cache (attn_kv_cache_save, the
// simulator's own op) and runs the attention kernel. A context row of
// batch b x ISL s is attn_prefill at spec's equivalent sequence (context 0,
// chunk sqrt(b) x s) standing for b sequences (roofline.PrefillSeqsFeature);
// a generation row is attn_decode at (batch, KV length - 1). The row's
// kernel source names the attention kernel (roofline.AttentionKernel); its
// KV cache is warm (roofline.Roofline.WarmKV: the collector replays the
// layer back to back); vLLM's largest capture size is the collector
// config's (collectorCaptureTokens).
func AttentionRowMs(r roofline.Roofline, a *kerneldb.AttentionRow, eb int) float64 {
	r.WarmKV = true
	r.CaptureTokens = collectorCaptureTokens(a.Batch)
	r.Kernels.Attention = roofline.AttentionKernel(a.KernelSource)
	if a.KernelSource == "vllm_flash_attn" {
		// The FLASH_ATTN backend: the FlashAttention vLLM builds for the
		// device (FA2 on Ampere, FA3 on Hopper).
		r.Kernels.Attention = roofline.KernelsFor(r.Device.Arch, a.Version).Attention
	}
	o := spec.Op{Family: spec.FamilyAttention, Kernels: 1, QHeads: a.Heads, KVHeads: a.KVHeads, HeadDim: a.HeadDim, ElemBytes: eb}
	var x []float64
	tokens := float64(a.Batch)
	if a.Context {
		o.Name = spec.OpAttnPrefill
		x = []float64{0, math.Sqrt(float64(a.Batch)) * float64(a.ISL), float64(a.Batch)}
		tokens *= float64(a.ISL)
	} else {
		o.Name = spec.OpAttnDecode
		x = []float64{float64(a.Batch), float64(a.KVLen() - 1)}
	}
	save := o
	save.Name = spec.OpAttnKVCacheSave
	return r.TimeMs(&o, x, spec.KernelOnly) + r.TimeMs(&save, []float64{tokens}, spec.KernelOnly)
}

// collectorCaptureTokens is the largest CUDA-graph capture size of the
// vLLM config AIConfigurator's attention collector builds for a row of
// batch sequences (collector/vllm/collect_attn.py at d5bad971c:
// max_num_seqs = batch, 8,192 batched tokens): vLLM's default
// min(max_num_seqs x 2, 512), within the batched tokens
// (vllm/config/vllm.py, VllmConfig._set_cudagraph_sizes). It decides the
// key-split bound vLLM passes (roofline.Roofline.CaptureTokens): a context
// row of more than two tokens a sequence gets none.
func collectorCaptureTokens(batch int) int {
	return min(2*batch, 512, 8192)
}

// gemmCollectorLayers is how many RowParallelLinear layers of one shape,
// each with its own weights, AIConfigurator's vLLM GEMM collector runs in
// one CUDA graph for a BF16 or FP8 row (collector/vllm/collect_gemm.py,
// outside_loop_count; latency / 6), replayed back to back.
const gemmCollectorLayers = 6

// BF16GEMMRowMs prices one BF16 (or FP16) row of AIConfigurator's gemm
// table with device model r as the row was timed: torch.nn.functional.linear
// (roofline.KernelFLinear; the vLLM 0.14.0 table names it vllm_default)
// over the six layers' weights the collector's graph replays, which stay
// in the L2 between replays when they fit (roofline.Roofline's
// RepeatedBlockBytes); a served step reads each layer's weights once.
// On a device without the cuBLAS terms (roofline.Curves.CuBLAS) the GEMM
// class's curve prices it, weights from HBM.
func BF16GEMMRowMs(r roofline.Roofline, g *kerneldb.GEMMRow) float64 {
	if r.Device.Curves.CuBLAS != nil {
		r.Kernels.BF16GEMM = roofline.KernelFLinear
		r.RepeatedBlockBytes = gemmCollectorLayers * float64(g.N) * float64(g.K) * 2
	}
	o := spec.Op{Name: spec.OpAttnPostProj, Family: spec.FamilyLinear, Kernels: 1, K: g.K, N: g.N, ElemBytes: 2}
	return r.TimeMs(&o, []float64{float64(g.M)}, spec.KernelOnly)
}

// MoERowMs prices one balanced moe row of AIConfigurator's tables (dtype
// bfloat16, fp8 or fp8_block) with device model r as the simulator splits
// the fused-MoE layer: moe_shuffling (the alignment) plus
// moe_grouped_gemm at tokens x top-k / EP routed pairs, with the experts
// kernel the row's kernel source names (roofline.MoEKernelOfSource).
func MoERowMs(r roofline.Roofline, m *kerneldb.MoERow) float64 {
	fp8 := m.Dtype == "fp8" || m.Dtype == "fp8_block"
	block := m.Dtype == "fp8_block"
	eb := 2
	if fp8 {
		eb = 1
	}
	if k := roofline.MoEKernelOfSource(m.KernelSource); k != "" {
		// The row's release's config era, and the kernel that ran it,
		// untuned: the 0.24.0 collector skips vLLM's warm-up.
		r.Kernels.MoE = roofline.KernelsFor(spec.ArchHopper, m.Version).MoE.With(k)
		r.FlashInferUntuned = true
	}
	local := max(m.Experts/m.MoEEP, 1)
	shuffle := spec.Op{Name: spec.OpMoEShuffling, Family: spec.FamilyMoE, Kernels: 1, Width: m.Hidden, TopK: m.TopK,
		LocalExperts: local, Experts: m.Experts, ElemBytes: 2, FP8: fp8, FP8Block: block}
	gg := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: m.Hidden, ExpertWidth: max(m.InterSize/m.MoETP, 1),
		LocalExperts: local, Experts: m.Experts, TopK: m.TopK, ElemBytes: eb, FP8: fp8, FP8Block: block}
	gg.NonGatedExperts = nonGatedMoERow(m)
	routed := float64(m.NumTokens) * float64(m.TopK) / float64(m.MoEEP)
	x := []float64{routed, math.Ceil(routed / float64(local)), 0, float64(m.NumTokens)}
	if groups := groupedTopKMoERow(m); groups > 0 {
		// Balanced logits tie every group: each token's experts come from
		// the same share of the groups, so only that share of the experts
		// gets rows.
		x[spec.ActiveExpertsFeature] = math.Max(1, math.Min(float64(local), routed)*groups)
	}
	ms := r.TimeMs(&shuffle, []float64{float64(m.NumTokens)}, spec.KernelOnly) + r.TimeMs(&gg, x, spec.KernelOnly)
	if kerneldb.CompareVersions(m.Version, "0.24.0") >= 0 {
		// The 0.24.0 collector (collect_moe.py at d5bad971c) calls the
		// FusedMoE module on router logits: the top-k routing runs in the
		// timed graph, priced as the simulator's own routing op.
		route := spec.Op{Name: spec.OpMoERoutingTopK, Family: spec.FamilyMoE, Kernels: 3, Width: m.Experts, TopK: m.TopK, ElemBytes: 4}
		ms += r.TimeMs(&route, []float64{float64(m.NumTokens)}, spec.KernelOnly)
	}
	return ms
}

// nemotronHMoEShapes are the (hidden, moe width, top-k, experts) of the
// Nemotron-H models in AIConfigurator's vLLM MoE cases (the model configs
// under src/aiconfigurator/model_configs at d5bad971c: Nemotron-3 Nano
// 30B-A3B 2688/1856/6/128, Super 120B-A12B and Ultra 550B-A55B at their
// MoE latent sizes 1024 and 2048: 1024/2688/22/512, 2048/5120/22/512).
var nemotronHMoEShapes = map[[4]int]bool{{2688, 1856, 6, 128}: true, {1024, 2688, 22, 512}: true, {2048, 5120, 22, 512}: true}

// nonGatedMoERow says a moe row's experts are non-gated: the vLLM 0.24.0
// collector builds a Nemotron-H layer with the model's activation,
// relu2_no_mul (collect_moe.py at d5bad971c), whose w13 holds one
// projection, not two; the 0.14.0 collector builds every layer gated.
func nonGatedMoERow(m *kerneldb.MoERow) bool {
	return kerneldb.CompareVersions(m.Version, "0.24.0") >= 0 && nemotronHMoEShapes[[4]int{m.Hidden, m.InterSize, m.TopK, m.Experts}]
}

// groupedTopKMoERow is the share of the experts a vLLM 0.24.0 moe row of
// DeepSeek-V3's shape (7168/2048/8/256) routes to: its collector routes
// such a layer with the model's grouped top-k (n_group 8, topk_group 4:
// the model config at AIConfigurator d5bad971c; collect_moe.py's
// use_grouped_topk for deepseek_v3), and the balanced logits give every
// group the same score, so every token picks its experts from the same 4
// of 8 groups: half the experts. 0 for other rows, and under expert
// parallelism, where which rank holds the chosen groups depends on how
// the ties break (not read).
func groupedTopKMoERow(m *kerneldb.MoERow) float64 {
	if kerneldb.CompareVersions(m.Version, "0.24.0") >= 0 && m.MoEEP == 1 && m.Hidden == 7168 && m.InterSize == 2048 && m.TopK == 8 && m.Experts == 256 {
		return 4.0 / 8
	}
	return 0
}
