package runresult

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/atomicfile"
	"github.com/ftk-dev/ftk/spec"
)

// BenchServeBackend is what a --save-result file names as its backend and
// endpoint type: the results of ftk simulate, not of a served endpoint.
const BenchServeBackend = "ftk-simulate"

// benchPercentiles are the percentiles written per metric: those of
// vllm bench serve --metric-percentiles 50,90,95,99.
var benchPercentiles = []struct {
	name string
	of   func(Stats) float64
}{
	{"p50", func(s Stats) float64 { return s.P50 }},
	{"p90", func(s Stats) float64 { return s.P90 }},
	{"p95", func(s Stats) float64 { return s.P95 }},
	{"p99", func(s Stats) float64 { return s.P99 }},
}

// BenchServeArrivals says how a run's requests arrived, as vllm bench
// serve's request_rate and max_concurrency record it.
type BenchServeArrivals struct {
	// RatePerS is the Poisson rate (0: not a fixed rate); AllAtZero that
	// every request arrived at t=0 (request_rate "inf").
	RatePerS  float64
	AllAtZero bool
	// Clients is the closed loop's concurrency (0: open loop).
	Clients int
}

// WriteBenchServe writes s as vllm bench serve --save-result writes its
// result (vllm/benchmarks/serve.py): the same field names and definitions
// (duration from the first arrival to the last completion; token counts
// and throughputs over completed requests; TTFT, TPOT over requests of
// two tokens or more, ITL over every gap between streamed chunks and E2EL,
// each as mean,
// median, std (population) and the p50, p90, p95 and p99 percentiles of
// --metric-percentiles 50,90,95,99 with --percentile-metrics
// ttft,tpot,itl,e2el), so a simulation and a benchmark diff field by
// field. Empty metrics are 0, as vLLM writes them. Not written: date (a
// simulation has no wall-clock date; the same inputs give the same
// bytes), the per-request lists of --save-detailed, and
// max_output_tokens_per_s (ftk keeps no per-second token counts). A run
// with speculative decoding adds vLLM's spec_decode_* fields.
func WriteBenchServe(path string, s *Summary, a BenchServeArrivals) error {
	var buf bytes.Buffer
	buf.WriteByte('{')
	n := 0
	put := func(key string, v any) {
		if n > 0 {
			buf.WriteString(", ")
		}
		n++
		k, _ := json.Marshal(key)
		val, err := json.Marshal(v)
		if err != nil { // NaN or Inf: vLLM would have written 0
			val = []byte("0")
		}
		buf.Write(k)
		buf.WriteString(": ")
		buf.Write(val)
	}
	model := s.Config.Model
	if m, err := spec.LookupModel(model); err == nil && m.HubID != "" {
		model = m.HubID // the id vllm bench serve --model names
	}
	var rate any
	switch {
	case a.RatePerS > 0:
		rate = a.RatePerS
	case a.AllAtZero:
		rate = "inf"
	}
	var clients any
	if a.Clients > 0 {
		clients = a.Clients
	}
	m := &s.Metrics
	put("endpoint_type", BenchServeBackend)
	put("backend", BenchServeBackend)
	put("label", nil)
	put("model_id", model)
	put("tokenizer_id", model)
	put("num_prompts", m.Arrived)
	put("request_rate", rate)
	put("burstiness", 1.0) // Poisson arrivals
	put("max_concurrency", clients)
	put("duration", m.MakespanS)
	put("completed", m.Completed)
	put("failed", m.Rejected) // refused by max_model_len, as vLLM's server refuses them
	put("total_input_tokens", m.PromptTokens)
	put("total_output_tokens", m.OutputTokens)
	put("request_throughput", m.RequestThroughputPerS)
	put("request_goodput", nil)
	put("output_throughput", m.OutputTokenThroughputPerS)
	put("total_token_throughput", m.TotalTokenThroughputPerS)
	put("max_concurrent_requests", m.PeakConcurrency)
	if sp := s.Speculative; sp != nil {
		// As vLLM's _add_spec_decode_result: the acceptance rate in
		// percent, the per-position rates as fractions.
		put("spec_decode_acceptance_rate", 100*sp.DraftAcceptanceRate)
		put("spec_decode_acceptance_length", sp.MeanAcceptanceLength)
		put("spec_decode_num_drafts", sp.Drafts)
		put("spec_decode_draft_tokens", sp.DraftTokens)
		put("spec_decode_accepted_tokens", sp.AcceptedTokens)
		put("spec_decode_per_position_acceptance_rates", sp.AcceptanceRatePerPosition)
	}
	for _, x := range []struct {
		name string
		st   Stats
	}{{"ttft", m.TTFTMs}, {"tpot", m.TPOTMs}, {"itl", m.ITLMs}, {"e2el", m.E2EMs}} {
		put("mean_"+x.name+"_ms", finite(x.st.Mean))
		put("median_"+x.name+"_ms", finite(x.st.P50))
		put("std_"+x.name+"_ms", finite(x.st.Std))
		for _, p := range benchPercentiles {
			put(p.name+"_"+x.name+"_ms", finite(p.of(x.st)))
		}
	}
	buf.WriteString("}\n")
	if err := atomicfile.Write(path, func(w *bufio.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	}); err != nil {
		return fmt.Errorf("save result %s: %w", path, err)
	}
	return nil
}

// finite is v, or 0 (what vLLM writes for a metric with no values) when v
// is NaN or infinite.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}
