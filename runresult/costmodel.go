package runresult

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/spec"
)

// The cost model section of a run summary (Summary.CostModel): what priced
// the run and how it answered. Package cost fills it.

// OpCount is a number of queries of one predictor key.
type OpCount struct {
	Op      string `json:"op"`
	Queries int64  `json:"queries"`
}

// GatingChoice records which predictor prices a MoE gating op and in which
// runtime context: prefill_hot (timed inside a forward pass, as a run
// executes it), never standalone_legacy (timed cold, alone).
type GatingChoice struct {
	Op      string `json:"op"`
	Context string `json:"context"`
	// Source is the predictor key used, or "roofline".
	Source string `json:"source"`
	Note   string `json:"note,omitempty"`
}

// KeyMatch records a predictor answering a key that differs from the one
// asked only in a condition the simulator leaves open (the MoE routing
// runtime path).
type KeyMatch struct {
	Asked string `json:"asked"`
	Used  string `json:"used"`
}

// CostModelReport describes the cost model of a run and how it answered.
type CostModelReport struct {
	Label string `json:"label"`
	// Profiles says where the op times come from: the profiles the bundle
	// was fitted on, or none (the built-in roofline).
	Profiles Profiles `json:"profiles"`
	// Measurement is the measurement type of every op time of the run.
	Measurement string `json:"measurement_type"`
	// ExecutionMode is eager, cuda-graph or piecewise; MaxCaptureSize the
	// largest batch a CUDA graph replays.
	ExecutionMode  string `json:"execution_mode"`
	MaxCaptureSize int    `json:"max_cudagraph_capture_size,omitempty"`
	// LaunchNote says how the CPU timeline of the forward is formed;
	// IssueNote where its per-kind issue costs come from, IssueCosts the
	// figures.
	LaunchNote string          `json:"launch_note"`
	IssueNote  string          `json:"issue_note"`
	IssueCosts spec.IssueCosts `json:"issue_costs"`
	// HostMsPerStep is the calibrated host time per step (0: modelled).
	HostMsPerStep float64 `json:"host_ms_per_step"`
	// HostSource is calibration, profile or default; HostNote gives the
	// figures.
	HostSource string `json:"host_source"`
	HostNote   string `json:"host_note"`
	// OpTable is the per-op issue and GPU time of the mean decode step.
	OpTable *OpTable `json:"op_table,omitempty"`
	// MoE describes routing and EP communication (MoE models only).
	MoE *MoEReport `json:"moe,omitempty"`
	// GatingContexts lists the context chosen for each MoE gating op.
	GatingContexts []GatingChoice `json:"gating_contexts,omitempty"`
	// MatchedKeys lists predictors used for a key that left a condition
	// open.
	MatchedKeys []KeyMatch `json:"matched_keys,omitempty"`
	// RooflineFallbacks counts, per op the bundle lacks, the queries the
	// roofline answered instead (one per op per step).
	RooflineFallbacks []OpCount `json:"roofline_fallbacks,omitempty"`
	// Extrapolated counts, per op, the queries its predictor answered
	// outside its sampled domain.
	Extrapolated []OpCount `json:"extrapolated,omitempty"`
}

// MoEReport describes how a run routes MoE tokens.
type MoEReport struct {
	Routing        string  `json:"routing"`
	Skew           float64 `json:"skew,omitempty"`
	Histogram      string  `json:"histogram,omitempty"`
	All2AllBackend string  `json:"all2all_backend"`
	// Method says how per-expert counts are drawn and priced.
	Method string `json:"method"`
	// RoutingTables is the number of routing tables the run used
	// (token-count bins x routers), drawn by it or taken from a store
	// shared with other runs (the same tables either way).
	RoutingTables int `json:"routing_tables"`
}

// Profiles is where a cost model's op times come from: the profiling
// backends (spec.Profile*) and device of the profiles a bundle was fitted
// on, or spec.ProfileRoofline without a bundle. Label says it in words, as
// simulate's summary prints it.
type Profiles struct {
	Backends []string `json:"profiling_backends"`
	Device   string   `json:"device"`
	Label    string   `json:"label"`
	// KernelSources are the kernels behind the bundle's rows (bundle
	// Meta.KernelSources) and KernelsLabel says what they are
	// (spec.KernelSourcesLabel): "plain PyTorch, not vLLM's kernels (...)".
	// Both empty without a bundle.
	KernelSources []string `json:"kernel_sources,omitempty"`
	KernelsLabel  string   `json:"kernels_label,omitempty"`
	// MeasuredAt and BlockSizes are the engine limits and KV-cache block
	// sizes the bundle's profiles were measured at (as recorded); Limits
	// says, naming both values, where the simulation's own differ
	// (spec.EngineLimits.Beyond).
	MeasuredAt *spec.EngineLimits `json:"engine_limits,omitempty"`
	BlockSizes []int              `json:"block_sizes,omitempty"`
	Limits     []string           `json:"limit_notes,omitempty"`
}

// OpTime is one operator's share of a representative step on stage 0: how
// often the step runs it, the host time to issue those runs eagerly and
// the GPU time they take.
type OpTime struct {
	Op      string  `json:"op"`
	Runs    float64 `json:"runs"`
	IssueMs float64 `json:"issue_ms"`
	GPUMs   float64 `json:"gpu_ms"`
}

// OpTable is the per-op CPU (issue) and GPU time of the run's mean decode
// step on stage 0.
type OpTable struct {
	// DecodeSeqs and ContextTokens describe the step: the mean decode batch
	// and mean context of the stage's decode steps.
	DecodeSeqs    int      `json:"decode_seqs"`
	ContextTokens int      `json:"context_tokens"`
	Rows          []OpTime `json:"rows"`
}

// WriteOpTable prints an op table (the breakdown of a run summary).
func WriteOpTable(w io.Writer, role string, t *OpTable) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "per op, %s stage 0, mean decode step (%d seqs, %d context tokens)\t runs\tissue ms\t  GPU ms\n", role, t.DecodeSeqs, t.ContextTokens)
	var issue, gpu float64
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "  %s\t%5.0f\t%8.3f\t%8.3f\n", r.Op, r.Runs, r.IssueMs, r.GPUMs)
		issue += r.IssueMs
		gpu += r.GPUMs
	}
	fmt.Fprintf(tw, "  total (issue eager; host-bound when issue > GPU)\t\t%8.3f\t%8.3f\n", issue, gpu)
	return tw.Flush()
}
