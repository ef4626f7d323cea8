package simulate

import (
	"math"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// histStats summarises a histogram (exact mean, bucketed percentiles).
func histStats(h *Histogram) runresult.Stats {
	if h.Count() == 0 {
		return runresult.Stats{}
	}
	return runresult.Stats{Count: int(h.Count()), Mean: h.Mean(), Std: h.Std(), P50: h.Percentile(50), P90: h.Percentile(90),
		P95: h.Percentile(95), P99: h.Percentile(99), PercentileErrorPct: HistogramErrorPct}
}

// collector gathers the run's metrics in memory that does not grow with the
// request count: TTFT, TPOT and E2E in latencyDists (exact percentiles up
// to exactValues requests, a histogram above), ITL in a histogram;
// per-request rows go straight to the sink.
type collector struct {
	sink RequestSink
	// first is Options.FirstToken (nil: none).
	first func(requestID int, nowS float64) error
	err   error // first sink (or first-token callback) error
	row   runresult.RequestMetrics

	ttft, tpot, e2e latencyDist
	itl             *Histogram
	// KV transfers of a disaggregated run: transfer and wait times (ms)
	// and bytes.
	kvTransfer, kvWait latencyDist
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
	firstFinishS float64
	queue        queueTrend
}

func newCollector(sink RequestSink, first func(int, float64) error) *collector {
	return &collector{sink: sink, first: first, itl: NewHistogram(), firstArrivalS: math.NaN()}
}

// firstToken passes a request's first output token to Options.FirstToken.
func (c *collector) firstToken(id int, nowS float64) {
	if c.err == nil {
		c.err = c.first(id, nowS)
	}
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
		c.row = runresult.RequestMetrics{RequestID: q.ID, ArrivalS: q.ArrivalS, PromptTokens: q.PromptTokens,
			OutputTokens: q.OutputTokens, FirstTokenS: math.NaN(), FinishS: math.NaN(), TTFTMs: math.NaN(),
			TPOTMs: math.NaN(), E2EMs: math.NaN(), MeanITLMs: math.NaN(), KVTransferMs: math.NaN(), Status: runresult.StatusRejected}
		c.write()
		return false
	}
	if q.ArrivalS < c.lastChangeS {
		// Read late from a held source (Simulation.release): it was in
		// the system since it arrived; before the first finish every
		// request read so far was too.
		c.areaReqS += c.lastChangeS - q.ArrivalS
		c.inSystem++
		if c.completed == 0 || q.ArrivalS < c.firstFinishS {
			c.peakInSystem = max(c.peakInSystem, c.inSystem+c.completed)
		}
		c.peakInSystem = max(c.peakInSystem, c.inSystem)
		return true
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
	if c.completed == 1 {
		c.firstFinishS = nowS
	}
	c.promptTokens += int64(r.prompt)
	c.outputTokens += int64(r.generated)
	t := spec.RequestTimes{ArrivalS: r.arrivalS, FirstTokenS: r.firstTokenS, FinishS: nowS, OutputTokens: int(r.generated)}
	c.row = runresult.RequestMetrics{RequestID: r.id, ArrivalS: r.arrivalS, PromptTokens: int(r.prompt),
		OutputTokens: int(r.generated), FirstTokenS: r.firstTokenS, FinishS: nowS,
		TTFTMs: t.TTFTMs(), TPOTMs: t.TPOTMs(), E2EMs: t.E2EMs(), KVTransferMs: r.kvTransferMs,
		Preemptions: int(r.preemptions), CachedPromptTokens: int(max(r.cachedPrompt, 0)), HostCachedPromptTokens: int(r.hostCached),
		Status: runresult.StatusCompleted}
	c.row.MeanITLMs = c.row.TPOTMs
	if r.chunks > 1 && r.chunks != r.generated {
		// Speculative decoding streams several tokens a chunk: the gaps
		// between chunks are the request's ITLs (vllm bench serve).
		c.row.MeanITLMs = (nowS - r.firstTokenS) * 1e3 / float64(r.chunks-1)
	}
	c.ttft.add(c.row.TTFTMs)
	c.e2e.add(c.row.E2EMs)
	if !math.IsNaN(c.row.TPOTMs) {
		c.tpot.add(c.row.TPOTMs)
	}
	c.write()
}

func (c *collector) write() {
	if c.sink != nil && c.err == nil {
		c.err = c.sink.WriteRequest(&c.row)
	}
}

// metrics summarises the run.
func (c *collector) metrics() runresult.Metrics {
	m := runresult.Metrics{Arrived: c.arrived, Completed: c.completed, Rejected: c.rejected,
		PromptTokens: c.promptTokens, OutputTokens: c.outputTokens, PeakConcurrency: c.peakInSystem,
		TTFTMs: c.ttft.stats(), TPOTMs: c.tpot.stats(), E2EMs: c.e2e.stats(), ITLMs: histStats(c.itl)}
	if c.completed > 0 {
		m.MakespanS = c.lastFinishS - c.firstArrivalS
	}
	if n := c.kvTransfer.count(); n > 0 {
		m.KVTransfer = &runresult.KVTransferStats{TransferMs: c.kvTransfer.stats(), WaitMs: c.kvWait.stats(), MeanBytes: c.kvBytes / float64(n)}
	}
	if m.MakespanS > 0 {
		m.RequestThroughputPerS = float64(c.completed) / m.MakespanS
		m.OutputTokenThroughputPerS = float64(c.outputTokens) / m.MakespanS
		m.TotalTokenThroughputPerS = float64(c.outputTokens+c.promptTokens) / m.MakespanS
		m.MeanConcurrency = c.areaReqS / m.MakespanS
	}
	m.Overload = c.queue.overload(c.completed, m.MakespanS)
	return m
}
