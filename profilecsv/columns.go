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

var linearKeys = []string{ColNHead, ColNKVHead, ColNEmbd, ColNExpandedEmbd, ColVocabSize, ColUseGatedMLP, ColUseQKNorm,
	ColAttnOutputGate, ColNumTokens, ColNumTensorParallelWorkers, ColPaddedNEmbd, ColPaddedNExpandedEmbd, ColModelArch,
	ColIsStep2Mini, ColShareExpertDim, ColShareQDim, ColMeasurementType, ColProfilingPrecision, ColQuantSignature,
	ColModelArchitectureProfile}

var attentionKeys = []string{ColNEmbd, ColNQHead, ColNKVHead, ColBlockSize, ColNumTensorParallelWorkers, ColMaxModelLen,
	ColBatchSize, ColPrefillChunkSize, ColKVCacheSize, ColIsPrefill, ColAttentionBackend, ColIsMixedBatch, ColMode,
	ColSeqLens, ColTotalTokens, ColMaxSeqLen, ColMinSeqLen, ColAvgSeqLen, ColEqualSeqLen, ColSeqLenVariance,
	ColSeqLenStd, ColSeqLenCV, ColIsChunkedPrefillSample, ColChunkStartToken, ColChunkEndToken,
	ColTotalPrefillTokens, ColProfilingPrecision, ColModelArch, ColQuantSignature, ColMeasurementType,
	ColModelArchitectureProfile, ColPrefillSeqLens, ColPrefillKVCacheSizes, ColDecodeKVCacheSizes,
	ColNumPrefillSeqs, ColNumDecodeSeqs, ColDecodeBatchSize, ColTotalBatchSize, ColTotalDecodeTokens,
	ColDecodeAvgKVCacheSize, ColBatchCompositionRatio, ColIsTrueMixedBatch,
	// collect's: the new tokens of the batch, the feature of the token-wise attention ops.
	ColNumTokens}

var moeKeys = []string{ColNumTokens, ColNumExperts, ColNumExpertsPerDevice, ColExpertParallelSize,
	ColRoutingRuntimePath, ColRoutingAssignmentPolicy, ColRoutingWeightPolicy, ColRoutingUsesRouterLogits,
	ColGatingRuntimeContext, ColGatingRuntimeContextImpl, ColRouterTopk, ColHiddenDim, ColExpertHiddenDim,
	ColUseGated, ColNumTensorParallelWorkers, ColTotalRoutedTokens, ColModelExpansionRatio, ColTokensPerExpertAvg,
	ColTokensToExpertsRatio, ColExpertUtilization, ColMinLoadRatio, ColLoadImbalanceCV, ColMaxLoadRatio,
	ColLoadEntropy, ColLoadGiniCoefficient, ColLoadDistribution, ColSeed, ColMoEGroupedGemmBackend,
	ColMeasurementType, ColProfilingPrecision, ColModelArch, ColQuantSignature, ColModelArchitectureProfile,
	// collect's: the grouped GEMM's second feature, the in-expert TP degree,
	// the EP rank measured and its per-expert token counts.
	ColMaxExpertTokens, ColExpertTensorParallelSize, ColEPRank, ColExpertTokenCounts}

// networkKeys follow the Vidur network files; the first, unnamed column is
// the row index as pandas writes it.
var networkKeys = []string{ColRank, ColNumWorkers, ColSize, ColCollective, ColDevicesPerNode, ColMaxDevicesPerNode,
	// collect's: the layout's TP (EP dispatch/combine predictors are keyed by it).
	ColNumTensorParallelWorkers, ColMeasurementType, ColProfilingPrecision}

// HostColumns is the CPU overhead schema of docs/formats.md, milliseconds.
var HostColumns = []string{ColModelName, ColBatchSize, ColTensorParallelDegree, ColNumPrefillTokens, ColNumDecodeTokens,
	ColSchedulingMode, "schedule_mean", "schedule_median", "sampler_e2e_mean", "sampler_e2e_median",
	"prepare_inputs_e2e_mean", "prepare_inputs_e2e_median", "process_model_outputs_mean",
	"process_model_outputs_median", "ray_comm_time_mean", ColMeasurementType,
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
// is "synthetic" for rows of the device model; kernel_source names the
// kernel of each operator (spec.KernelSourceCell); shape_id keys resume;
// the GPU telemetry columns are blank without NVML.
var ExtraColumns = []string{ColProfilingBackend, ColImpl, ColKernelSource, ColDevice, ColModelName, ColShapeID,
	ColSmClockMhz, ColMemClockMhz, ColTemperatureC, ColPowerW, ColClockEventReasons, ColRemeasured}

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
