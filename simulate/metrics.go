package simulate

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
	Status       string
}

// RequestSink receives each request's metrics as it finishes (or is
// rejected), in simulated-time order. The pointer is only valid during the
// call.
type RequestSink interface {
	WriteRequest(m *RequestMetrics) error
}

// Stats are the mean and percentiles of one latency metric, in
// milliseconds, over Count values (all zero when Count is zero).
type Stats struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// statsOf sorts v in place and summarises it with spec's percentile rule.
func statsOf(v []float64) Stats {
	if len(v) == 0 {
		return Stats{}
	}
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	return Stats{Count: len(v), Mean: sum / float64(len(v)),
		P50: spec.PercentileSorted(v, 50), P90: spec.PercentileSorted(v, 90),
		P95: spec.PercentileSorted(v, 95), P99: spec.PercentileSorted(v, 99)}
}

// histStats summarises a histogram (exact mean, bucketed percentiles).
func histStats(h *Histogram) Stats {
	if h.Count() == 0 {
		return Stats{}
	}
	return Stats{Count: int(h.Count()), Mean: h.Mean(), P50: h.Percentile(50), P90: h.Percentile(90),
		P95: h.Percentile(95), P99: h.Percentile(99)}
}

// collector gathers the run's metrics. It keeps one float64 per request for
// each of TTFT, TPOT and E2E (exact percentiles; 24 bytes a request) and the
// ITL histogram (fixed size); per-request rows go straight to the sink.
type collector struct {
	sink RequestSink
	err  error // first sink error
	row  RequestMetrics

	ttft, tpot, e2e []float64
	itl             *Histogram
	// KV transfers of a disaggregated run: transfer and wait times (ms)
	// and bytes.
	kvTransfer, kvWait []float64
	kvBytes            float64

	arrived, completed, rejected int
	promptTokens, outputTokens   int64
	firstArrivalS, lastFinishS   float64

	// Little's law bookkeeping: the integral over time of the number of
	// requests in the system, kept from arrivals and completions.
	inSystem     int
	areaReqS     float64
	lastChangeS  float64
	peakInSystem int
}

func newCollector(sink RequestSink) *collector {
	return &collector{sink: sink, itl: NewHistogram(), firstArrivalS: math.NaN()}
}

func (c *collector) advance(nowS float64) {
	c.areaReqS += float64(c.inSystem) * (nowS - c.lastChangeS)
	c.lastChangeS = nowS
}

// arrive counts an arrival; it reports whether the request is admitted.
func (c *collector) arrive(q *spec.Request, maxModelLen int) bool {
	if c.arrived == 0 {
		c.firstArrivalS = q.ArrivalS
		c.lastChangeS = q.ArrivalS
	}
	c.arrived++
	if q.PromptTokens+q.OutputTokens > maxModelLen {
		c.rejected++
		c.row = RequestMetrics{RequestID: q.ID, ArrivalS: q.ArrivalS, PromptTokens: q.PromptTokens,
			OutputTokens: q.OutputTokens, FirstTokenS: math.NaN(), FinishS: math.NaN(), TTFTMs: math.NaN(),
			TPOTMs: math.NaN(), E2EMs: math.NaN(), MeanITLMs: math.NaN(), KVTransferMs: math.NaN(), Status: StatusRejected}
		c.write()
		return false
	}
	c.advance(q.ArrivalS)
	c.inSystem++
	c.peakInSystem = max(c.peakInSystem, c.inSystem)
	return true
}

// finish records a completed request.
func (c *collector) finish(r *reqState, nowS float64) {
	c.advance(nowS)
	c.inSystem--
	c.completed++
	c.lastFinishS = nowS
	c.promptTokens += int64(r.prompt)
	c.outputTokens += int64(r.generated)
	t := spec.RequestTimes{ArrivalS: r.arrivalS, FirstTokenS: r.firstTokenS, FinishS: nowS, OutputTokens: int(r.generated)}
	c.row = RequestMetrics{RequestID: r.id, ArrivalS: r.arrivalS, PromptTokens: int(r.prompt),
		OutputTokens: int(r.generated), FirstTokenS: r.firstTokenS, FinishS: nowS,
		TTFTMs: t.TTFTMs(), TPOTMs: t.TPOTMs(), E2EMs: t.E2EMs(), KVTransferMs: r.kvTransferMs,
		Preemptions: int(r.preemptions), Status: StatusCompleted}
	c.row.MeanITLMs = c.row.TPOTMs
	c.ttft = append(c.ttft, c.row.TTFTMs)
	c.e2e = append(c.e2e, c.row.E2EMs)
	if !math.IsNaN(c.row.TPOTMs) {
		c.tpot = append(c.tpot, c.row.TPOTMs)
	}
	c.write()
}

func (c *collector) write() {
	if c.sink != nil && c.err == nil {
		c.err = c.sink.WriteRequest(&c.row)
	}
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
	// ITLMs has an exact mean and histogram percentiles (within 0.2%).
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
	// KVTransfer summarises the KV-cache transfers of a disaggregated run.
	KVTransfer *KVTransferStats `json:"kv_transfer,omitempty"`
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

// metrics summarises the run. It sorts the collected slices.
func (c *collector) metrics() Metrics {
	m := Metrics{Arrived: c.arrived, Completed: c.completed, Rejected: c.rejected,
		PromptTokens: c.promptTokens, OutputTokens: c.outputTokens, PeakConcurrency: c.peakInSystem,
		TTFTMs: statsOf(c.ttft), TPOTMs: statsOf(c.tpot), E2EMs: statsOf(c.e2e), ITLMs: histStats(c.itl)}
	if c.completed > 0 {
		m.MakespanS = c.lastFinishS - c.firstArrivalS
	}
	if len(c.kvTransfer) > 0 {
		n := float64(len(c.kvTransfer))
		m.KVTransfer = &KVTransferStats{TransferMs: statsOf(c.kvTransfer), WaitMs: statsOf(c.kvWait), MeanBytes: c.kvBytes / n}
	}
	if m.MakespanS > 0 {
		m.RequestThroughputPerS = float64(c.completed) / m.MakespanS
		m.OutputTokenThroughputPerS = float64(c.outputTokens) / m.MakespanS
		m.TotalTokenThroughputPerS = float64(c.outputTokens+c.promptTokens) / m.MakespanS
		m.MeanConcurrency = c.areaReqS / m.MakespanS
	}
	return m
}
