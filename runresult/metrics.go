package runresult

import (
	"math"
	"slices"

	"github.com/ftk-dev/ftk/spec"
)

// Request statuses.
const (
	StatusCompleted = "completed"
	// StatusRejected marks a request longer than max_model_len (prompt plus
	// output tokens), which vLLM's server refuses.
	StatusRejected = "rejected"
)

// RequestMetrics are the outcome of one request: one row of the per-request
// CSV and Arrow files. Times are seconds from the trace start; latencies
// are milliseconds with the definitions of spec (TTFT, TPOT, E2E). Fields a
// request does not have (a rejected request's times; TPOT of a one-token
// request) are NaN.
type RequestMetrics struct {
	RequestID    int
	ArrivalS     float64
	PromptTokens int
	OutputTokens int
	FirstTokenS  float64
	FinishS      float64
	TTFTMs       float64
	TPOTMs       float64
	E2EMs        float64
	// MeanITLMs is the mean gap between the request's output tokens; the
	// gaps add up to E2E - TTFT, so it equals TPOTMs.
	MeanITLMs float64
	// KVTransferMs is the time the request's KV cache took from the prefill
	// to the decode instance (disaggregated runs; NaN otherwise): part of
	// its TTFT.
	KVTransferMs float64
	Preemptions  int
	// CachedPromptTokens is the prompt tokens the prefix cache held when
	// the request was first scheduled (0 without prefix caching).
	CachedPromptTokens int
	// HostCachedPromptTokens is the prompt tokens after those found on
	// the GPU that the host tier held and loaded (0 without a host tier).
	HostCachedPromptTokens int
	Status                 string
}

// Stats are the mean and percentiles of one latency metric, in
// milliseconds, over Count values (all zero when Count is zero, and null
// in summary.json: statsjson.go). The mean
// is exact; the percentiles are exact when PercentileErrorPct is zero, and
// otherwise read from a log histogram, within PercentileErrorPct percent
// of the exact value (the simulator's ITL, and TTFT, TPOT, E2E and KV
// transfer times of runs over 100,000 requests).
type Stats struct {
	Count              int     `json:"count"`
	Mean               float64 `json:"mean"`
	Std                float64 `json:"std"` // population standard deviation, exact
	P50                float64 `json:"p50"`
	P90                float64 `json:"p90"`
	P95                float64 `json:"p95"`
	P99                float64 `json:"p99"`
	PercentileErrorPct float64 `json:"percentile_error_pct,omitempty"`
}

// StatsOf sorts v in place and summarises it with spec's percentile rule.
func StatsOf(v []float64) Stats {
	if len(v) == 0 {
		return Stats{}
	}
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return Stats{Count: len(v), Mean: mean, Std: math.Sqrt(ss / float64(len(v))),
		P50: spec.PercentileSorted(v, 50), P90: spec.PercentileSorted(v, 90),
		P95: spec.PercentileSorted(v, 95), P99: spec.PercentileSorted(v, 99)}
}

// Metrics are the run's aggregate results.
type Metrics struct {
	Arrived   int `json:"arrived"`
	Completed int `json:"completed"`
	Rejected  int `json:"rejected"`
	// MakespanS runs from the first arrival to the last completion.
	MakespanS                 float64 `json:"makespan_s"`
	RequestThroughputPerS     float64 `json:"request_throughput_per_s"`
	OutputTokenThroughputPerS float64 `json:"output_token_throughput_per_s"`
	TotalTokenThroughputPerS  float64 `json:"total_token_throughput_per_s"`
	PromptTokens              int64   `json:"prompt_tokens"`
	OutputTokens              int64   `json:"output_tokens"`
	TTFTMs                    Stats   `json:"ttft_ms"`
	TPOTMs                    Stats   `json:"tpot_ms"`
	// ITLMs has an exact mean and histogram percentiles (within 0.2%,
	// PercentileErrorPct).
	ITLMs Stats `json:"itl_ms"`
	E2EMs Stats `json:"e2e_ms"`
	// MeanConcurrency is the time-average number of admitted requests in
	// the system over the makespan (Little's law: it equals throughput x
	// mean E2E).
	MeanConcurrency float64 `json:"mean_concurrency"`
	PeakConcurrency int     `json:"peak_concurrency"`
	Preemptions     int64   `json:"preemptions"`
	// PeakKVUsage is the largest fraction of a replica's KV-cache blocks
	// in use at once.
	PeakKVUsage float64 `json:"peak_kv_usage"`
	Steps       int64   `json:"steps"`
	// Overload, when set, says that the offered load exceeded what the
	// engines serve: the waiting queue grew through the arrivals, so the
	// latencies grow with the run's length.
	Overload *Overload `json:"overload,omitempty"`
	// KVTransfer summarises the KV-cache transfers of a disaggregated run.
	KVTransfer *KVTransferStats `json:"kv_transfer,omitempty"`
	// PrefixCache is the prefix cache's lookups, over every engine.
	PrefixCache PrefixCacheStats `json:"prefix_cache"`
}

// KVTransferStats are the KV-cache transfers from prefill to decode
// instances. TransferMs runs from the start of a transfer (link latency
// included) to its end; WaitMs from the end of the prefill to the start of
// the transfer (waiting for free blocks on the decode instance). Both are
// part of TTFT.
type KVTransferStats struct {
	TransferMs Stats   `json:"transfer_ms"`
	WaitMs     Stats   `json:"wait_ms"`
	MeanBytes  float64 `json:"mean_bytes"`
}

// Overload describes a run whose queue grew without bound: the mean number
// of waiting requests (admitted, not yet scheduled) over the second and the
// last quarter of the arrivals, the offered rate (arrivals per second over
// the arrival window) and the completed rate (over the makespan).
type Overload struct {
	WaitingSecondQuarter float64 `json:"waiting_second_quarter"`
	WaitingLastQuarter   float64 `json:"waiting_last_quarter"`
	OfferedRatePerS      float64 `json:"offered_rate_per_s"`
	CompletedRatePerS    float64 `json:"completed_rate_per_s"`
}
