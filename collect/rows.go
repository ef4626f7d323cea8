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
		profilecsv.ColMeasurementType:          r.measurement,
		profilecsv.ColProfilingPrecision:       rm.precision,
		profilecsv.ColQuantSignature:           "none",
		profilecsv.ColModelArch:                "generic",
		profilecsv.ColModelArchitectureProfile: "generic",
		profilecsv.ColProfilingBackend:         rm.backend,
		profilecsv.ColDevice:                   rm.device,
		profilecsv.ColModelName:                m.Name,
		profilecsv.ColShapeID:                  s.ID,
		profilecsv.ColRemeasured:               itoa(r.remeasured),
		profilecsv.ColNumTensorParallelWorkers: itoa(s.Layout.TP),
	}
	if m.WeightBytes == 1 {
		v[profilecsv.ColQuantSignature] = "fp8"
	}
	impls, kernels := map[string]bool{}, map[string]string{}
	for op, resp := range r.resp {
		kernels[op] = resp.KernelSource
		st := resp.Stats
		p := "time_stats." + op + "."
		v[p+"min"], v[p+"max"], v[p+"mean"] = ftoa(st.Min), ftoa(st.Max), ftoa(st.Mean)
		v[p+"median"], v[p+"std"], v[p+"count"] = ftoa(st.Median), ftoa(st.Std), itoa(st.Count)
		impls[resp.Impl] = true
	}
	v[profilecsv.ColImpl] = joinKeys(impls)
	v[profilecsv.ColKernelSource] = spec.KernelSourceCell(kernels)
	r.gpu.fill(v)
	switch s.Family {
	case spec.FamilyLinear:
		rm.linearValues(v, s)
	case spec.FamilyAttention:
		rm.attentionValues(v, r)
	case spec.FamilyMoE:
		rm.moeValues(v, r)
	case spec.FamilyCollective:
		v[profilecsv.ColRank], v[profilecsv.ColNumWorkers], v[profilecsv.ColSize] = "0", itoa(s.Workers), strconv.FormatInt(s.SizeBytes, 10)
		v[profilecsv.ColCollective], v[profilecsv.ColDevicesPerNode], v[profilecsv.ColMaxDevicesPerNode] = s.Collective, itoa(s.Workers), "8"
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
	v[profilecsv.ColNHead], v[profilecsv.ColNKVHead], v[profilecsv.ColNEmbd] = itoa(m.NumHeads), itoa(m.NumKVHeads), itoa(m.HiddenSize)
	v[profilecsv.ColNExpandedEmbd], v[profilecsv.ColPaddedNExpandedEmbd], v[profilecsv.ColPaddedNEmbd] = itoa(expanded), itoa(expanded), itoa(m.HiddenSize)
	v[profilecsv.ColVocabSize], v[profilecsv.ColUseGatedMLP], v[profilecsv.ColUseQKNorm] = itoa(m.VocabSize), pybool(m.GatedMLP), pybool(m.QKNorm)
	v[profilecsv.ColAttnOutputGate], v[profilecsv.ColIsStep2Mini], v[profilecsv.ColNumTokens] = "False", "False", itoa(s.Tokens)
	if m.SharedExperts > 0 {
		w := m.SharedExpertIntermediateSize
		if w == 0 {
			w = m.MoEIntermediateSize
		}
		v[profilecsv.ColShareExpertDim] = itoa(w * m.SharedExperts)
	}
}

// attentionValues fills the Frontier attention keys. Single prefills and
// equal-context decodes fill batch_size, prefill_chunk_size and
// kv_cache_size as they stand; batches of several prefills
// (is_mixed_batch) and true mixed batches keep those at 0, as Frontier
// does, and describe their sequences in the list columns.
func (rm *rowMaker) attentionValues(v map[string]string, r *result) {
	m, s := rm.model, r.shape
	v[profilecsv.ColNEmbd], v[profilecsv.ColNQHead], v[profilecsv.ColNKVHead] = itoa(m.HiddenSize), itoa(m.NumHeads), itoa(m.NumKVHeads)
	v[profilecsv.ColBlockSize], v[profilecsv.ColMaxModelLen] = itoa(rm.limits.BlockSize), itoa(rm.limits.MaxModelLen)
	v[profilecsv.ColAttentionBackend] = "SYNTHETIC_ROOFLINE"
	if resp := r.resp[spec.OpAttnPrefill]; resp != nil {
		v[profilecsv.ColAttentionBackend] = strings.ToUpper(resp.Impl)
	} else if resp := r.resp[spec.OpAttnDecode]; resp != nil {
		v[profilecsv.ColAttentionBackend] = strings.ToUpper(resp.Impl)
	}
	v[profilecsv.ColNumTokens], v[profilecsv.ColTotalTokens] = itoa(s.Tokens), itoa(s.Tokens)
	v[profilecsv.ColIsMixedBatch], v[profilecsv.ColIsTrueMixedBatch], v[profilecsv.ColMode] = "False", "", "even"
	v[profilecsv.ColIsChunkedPrefillSample], v[profilecsv.ColChunkStartToken], v[profilecsv.ColChunkEndToken], v[profilecsv.ColTotalPrefillTokens] = "False", "0", "0", "0"
	v[profilecsv.ColPrefillChunkSize], v[profilecsv.ColKVCacheSize] = "0", "0"
	var seqLens []int
	switch s.Kind {
	case KindDecode:
		v[profilecsv.ColIsPrefill], v[profilecsv.ColBatchSize], v[profilecsv.ColKVCacheSize] = "False", itoa(len(s.DecodeContexts)), itoa(s.DecodeContexts[0])
		seqLens = repeat(1, len(s.DecodeContexts))
	case KindPrefill:
		c, k := s.PrefillChunks[0], s.PrefillContexts[0]
		v[profilecsv.ColIsPrefill], v[profilecsv.ColBatchSize], v[profilecsv.ColPrefillChunkSize], v[profilecsv.ColKVCacheSize] = "True", "1", itoa(c), itoa(k)
		v[profilecsv.ColIsChunkedPrefillSample], v[profilecsv.ColChunkStartToken] = pybool(k > 0), itoa(k)
		v[profilecsv.ColChunkEndToken], v[profilecsv.ColTotalPrefillTokens] = itoa(k+c), itoa(k+c)
		seqLens = s.PrefillChunks
	case KindMultiPrefill:
		v[profilecsv.ColIsPrefill], v[profilecsv.ColBatchSize], v[profilecsv.ColIsMixedBatch] = "True", itoa(len(s.PrefillChunks)), "True"
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
		v[profilecsv.ColIsPrefill], v[profilecsv.ColBatchSize], v[profilecsv.ColMode], v[profilecsv.ColIsTrueMixedBatch] = "True", itoa(np+nd), "true_mixed", "True"
		v[profilecsv.ColTotalPrefillTokens] = itoa(sumPre)
		v[profilecsv.ColPrefillSeqLens], v[profilecsv.ColPrefillKVCacheSizes] = pylist(s.PrefillChunks), pylist(s.PrefillContexts)
		v[profilecsv.ColDecodeKVCacheSizes], v[profilecsv.ColNumPrefillSeqs], v[profilecsv.ColNumDecodeSeqs] = pylist(s.DecodeContexts), itoa(np), itoa(nd)
		v[profilecsv.ColDecodeBatchSize], v[profilecsv.ColTotalBatchSize], v[profilecsv.ColTotalDecodeTokens] = itoa(nd), itoa(np+nd), itoa(nd)
		v[profilecsv.ColDecodeAvgKVCacheSize] = ftoa(float64(sumCtx) / float64(nd))
		v[profilecsv.ColBatchCompositionRatio] = ftoa(float64(np) / float64(np+nd))
		v[profilecsv.ColIsTrueMixedBatch] = "True"
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
		v[profilecsv.ColSeqLens], v[profilecsv.ColMaxSeqLen], v[profilecsv.ColMinSeqLen] = pylist(seqLens), itoa(hi), itoa(lo)
		v[profilecsv.ColAvgSeqLen], v[profilecsv.ColEqualSeqLen] = ftoa(mean), itoa(int(math.Sqrt(sq)))
		v[profilecsv.ColSeqLenVariance], v[profilecsv.ColSeqLenStd], v[profilecsv.ColSeqLenCV] = ftoa(variance), ftoa(math.Sqrt(variance)), ftoa(math.Sqrt(variance)/mean)
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
	v[profilecsv.ColNumTokens], v[profilecsv.ColNumExperts], v[profilecsv.ColNumExpertsPerDevice] = itoa(s.Tokens), itoa(m.NumExperts), itoa(len(s.Load.Counts))
	v[profilecsv.ColExpertParallelSize], v[profilecsv.ColRoutingRuntimePath] = itoa(s.Layout.EP), s.RoutingPath
	v[profilecsv.ColRoutingAssignmentPolicy], v[profilecsv.ColRoutingWeightPolicy], v[profilecsv.ColRoutingUsesRouterLogits] = pol[0], pol[1], pol[2]
	v[profilecsv.ColGatingRuntimeContext], v[profilecsv.ColGatingRuntimeContextImpl] = s.GatingContext, "none"
	if s.GatingContext == spec.GatingPrefillHot {
		v[profilecsv.ColGatingRuntimeContextImpl] = "ffn_like_prefix_20x"
	}
	v[profilecsv.ColRouterTopk], v[profilecsv.ColHiddenDim], v[profilecsv.ColExpertHiddenDim] = itoa(m.TopK), itoa(m.HiddenSize), itoa(m.MoEIntermediateSize)
	v[profilecsv.ColUseGated], v[profilecsv.ColTotalRoutedTokens] = pybool(m.GatedMLP), itoa(st.Routed)
	v[profilecsv.ColModelExpansionRatio] = ftoa(float64(m.MoEIntermediateSize) / float64(m.HiddenSize))
	v[profilecsv.ColTokensPerExpertAvg], v[profilecsv.ColTokensToExpertsRatio] = ftoa(st.AvgPerExp), ftoa(st.AvgPerExp)
	v[profilecsv.ColExpertUtilization], v[profilecsv.ColMinLoadRatio], v[profilecsv.ColLoadImbalanceCV] = ftoa(st.Utilization), ftoa(st.MinRatio), ftoa(st.CV)
	v[profilecsv.ColMaxLoadRatio], v[profilecsv.ColLoadEntropy], v[profilecsv.ColLoadGiniCoefficient] = ftoa(st.MaxRatio), ftoa(st.EntropyBits), ftoa(st.Gini)
	v[profilecsv.ColLoadDistribution], v[profilecsv.ColSeed] = s.Distribution, strconv.FormatUint(s.LoadSeed, 10)
	if resp := r.resp[spec.OpMoEGroupedGEMM]; resp != nil {
		v[profilecsv.ColMoEGroupedGemmBackend] = resp.Impl
	}
	v[profilecsv.ColMaxExpertTokens], v[profilecsv.ColExpertTensorParallelSize] = itoa(s.Load.MaxExpert()), itoa(s.Layout.MoETP())
	v[profilecsv.ColEPRank], v[profilecsv.ColExpertTokenCounts] = itoa(s.Load.Rank), pylist(s.Load.Counts)
}

func (rm *rowMaker) hostValues(v map[string]string, r *result) {
	s := r.shape
	v[profilecsv.ColBatchSize], v[profilecsv.ColTensorParallelDegree] = itoa(s.BatchSize), itoa(s.Layout.TP)
	v[profilecsv.ColNumPrefillTokens], v[profilecsv.ColNumDecodeTokens], v[profilecsv.ColSchedulingMode] = itoa(s.PrefillTokens), itoa(s.DecodeTokens), "sync"
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
