package simulate

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// llamaKVBytesPerToken is llama-3.1-8b's KV cache per token: 32 layers x
// K and V x 8 KV heads x 128 x 2 bytes.
const llamaKVBytesPerToken = 32 * 2 * 8 * 128 * 2

// disaggConfig is llama-3.1-8b with prefill instances at TP2 and decode
// instances at TP1 behind a link of gbps GB/s and latencyUs.
func disaggConfig(prefill, decode int, gbps, latencyUs float64) runresult.Config {
	cfg := testConfig()
	cfg.Mode = runresult.ModeDisaggregated
	cfg.Disaggregation = runresult.DisaggregationConfig{PrefillInstances: prefill, DecodeInstances: decode,
		PrefillLayout: spec.Layout{TP: 2}, DecodeLayout: spec.Layout{TP: 1}, KVLinkGBps: gbps, KVLinkLatencyUs: latencyUs}
	return cfg
}

// roleConfig is cfg co-located on layout l, to price its steps.
func roleConfig(cfg runresult.Config, l spec.Layout) runresult.Config {
	cfg.Mode, cfg.Disaggregation, cfg.Layout = "", runresult.DisaggregationConfig{}, l
	return cfg
}

// One request alone: its TTFT is the prefill step on a prefill instance
// (TP2), the transfer of its 1000 tokens' KV cache (latency + bytes /
// bandwidth) and the first decode step on a decode instance (TP1), which
// recomputes the last prompt token on top of the other 999. The transfer
// time is reported on its own too; later tokens are decode steps.
func TestDisaggregatedSingleRequestTTFT(t *testing.T) {
	cfg := disaggConfig(1, 1, 10, 100)
	const prompt, output = 1000, 5
	sum, sink, log, _ := simulate(t, cfg, reqs([3]float64{1, prompt, output}))
	pre, dec := roleConfig(cfg, spec.Layout{TP: 2}), roleConfig(cfg, spec.Layout{TP: 1})
	prefill := price(t, pre, prefillShape(prompt, 0))
	transfer := 100e-6 + float64(prompt*llamaKVBytesPerToken)/10e9
	first := price(t, dec, cost.BatchShape{Tokens: 1, Seqs: 1, PrefillChunks: []int{1}, PrefillContexts: []int{prompt - 1}})
	r := sink.rows[0]
	if want := (prefill + transfer + first) * 1e3; !near(r.TTFTMs, want) {
		t.Errorf("TTFT %.6f ms, want prefill %.6f + transfer %.6f + first decode step %.6f = %.6f ms", r.TTFTMs, prefill*1e3, transfer*1e3, first*1e3, want)
	}
	if !near(r.KVTransferMs, transfer*1e3) || sum.Metrics.KVTransfer == nil || !near(sum.Metrics.KVTransfer.TransferMs.Mean, transfer*1e3) ||
		sum.Metrics.KVTransfer.MeanBytes != prompt*llamaKVBytesPerToken || sum.Metrics.KVTransfer.WaitMs.Mean != 0 {
		t.Errorf("transfer %g ms in the row, %+v in the summary; want %g ms", r.KVTransferMs, sum.Metrics.KVTransfer, transfer*1e3)
	}
	e2e := prefill + transfer + first
	for i := 1; i < output; i++ {
		e2e += price(t, dec, decodeShape(prompt+i-1))
	}
	if !near(r.E2EMs, e2e*1e3) || r.OutputTokens != output {
		t.Errorf("E2E %g ms, %d tokens; want %g ms, %d", r.E2EMs, r.OutputTokens, e2e*1e3, output)
	}
	if len(log.steps) != 1+output || log.steps[0].Role != RolePrefill || log.steps[1].Role != RoleDecode {
		t.Errorf("%d steps (%s then %s), want 1 prefill and %d decode", len(log.steps), log.steps[0].Role, log.steps[1].Role, output)
	}
	t.Logf("TTFT %.3f ms = prefill %.3f + KV transfer %.3f + first decode step %.3f", r.TTFTMs, prefill*1e3, transfer*1e3, first*1e3)
}

// Transfers share their link: two started together each take the latency
// plus twice their bytes over the bandwidth.
func TestKVLinkSharing(t *testing.T) {
	one := disaggConfig(1, 1, 5, 50)
	_, s1, _, _ := simulate(t, one, reqs([3]float64{0, 1000, 3}))
	_, s2, _, _ := simulate(t, one, reqs([3]float64{0, 1000, 3}, [3]float64{0, 1000, 3}))
	bytes := float64(1000 * llamaKVBytesPerToken)
	alone, shared := 50e-3+bytes/5e9*1e3, 50e-3+2*bytes/5e9*1e3
	if r := s1.rows[0]; !near(r.KVTransferMs, alone) {
		t.Errorf("one transfer %g ms, want %g", r.KVTransferMs, alone)
	}
	for _, r := range s2.rows {
		if !near(r.KVTransferMs, shared) {
			t.Errorf("request %d: %g ms with another on the link, want %g", r.RequestID, r.KVTransferMs, shared)
		}
	}
	// Unequal transfers on a link of 1 MB/s without latency: 1 MB and 3 MB
	// start together at half the bandwidth each; the first ends at 2 s,
	// the second has 2 MB left and ends at 4 s.
	var loop Loop
	rem := []float64{1e6, 3e6}
	ends := map[int32]float64{}
	k := &kvLink{loop: &loop, bytesPerS: 1e6, done: func(t int32, nowS float64) { ends[t] = nowS },
		remaining: func(t int32) *float64 { return &rem[t] }}
	k.start(0, 0)
	k.start(1, 0)
	for loop.Step() {
	}
	if math.Abs(ends[0]-2) > 1e-9 || math.Abs(ends[1]-4) > 1e-9 {
		t.Errorf("transfers ended at %v, want 2 s and 4 s", ends)
	}
}

// A decode instance accepts a request only when it can reserve blocks for
// its prompt. With 70 blocks of 16 tokens per instance, two 500-token
// prompts (32 blocks each) prefill together and move to the decode
// instance, which then has 6 blocks left (4 once they grow to 33); the
// third prompt prefills once the first two have left the prefill instance
// and waits for blocks until they finish.
func TestDecodeWaitsForBlocks(t *testing.T) {
	cfg := disaggConfig(1, 1, 50, 50)
	cfg.Engine.NumGPUBlocksOverride = 70
	cfg.Engine.MaxModelLen = 1024
	sum, sink, log, _ := simulate(t, cfg, reqs([3]float64{0, 500, 20}, [3]float64{0, 500, 20}, [3]float64{0, 500, 20}))
	rows := sink.byID()
	for _, s := range log.steps {
		if s.KVBlocksUsed > 70 {
			t.Fatalf("INV-4: %s step uses %d of 70 blocks", s.Role, s.KVBlocksUsed)
		}
	}
	if first := log.steps[0]; first.Role != RolePrefill || first.PrefillSeqs != 2 {
		t.Errorf("INV-4: first step %+v, want the two prompts that fit", first)
	}
	kv := sum.Metrics.KVTransfer
	if kv == nil || kv.WaitMs.Count != 3 || kv.WaitMs.P50 != 0 || !(kv.WaitMs.P99 > 0) {
		t.Fatalf("INV-4: KV waits %+v: want the third request alone to wait", kv)
	}
	if c := rows[2]; !(c.FirstTokenS > rows[0].FinishS) || c.Status != runresult.StatusCompleted || sum.Metrics.Preemptions != 0 {
		t.Errorf("INV-4: third request's first token at %g s, first request finished at %g s; %d preemptions", c.FirstTokenS, rows[0].FinishS, sum.Metrics.Preemptions)
	}
}

// A randomized disaggregated run with tight limits (two prefill and three
// decode instances, small KV caches, least-loaded routing, async
// scheduling): every request
// completes with the tokens it asked for, every block of every instance
// comes back, Little's law holds, and the Chrome trace shows each transfer.
func TestDisaggregatedRunInvariants(t *testing.T) {
	cfg := disaggConfig(2, 3, 20, 50)
	cfg.Router = runresult.RouterLeastLoaded
	cfg.Engine.MaxNumBatchedTokens = 1024
	cfg.Engine.MaxNumSeqs = 32
	cfg.Engine.MaxModelLen = 4096
	cfg.Engine.NumGPUBlocksOverride = 400
	cfg.Engine.AsyncScheduling = true
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 8, NumRequests: 1500, Seed: 11}
	run := runChecked(t, cfg)
	sum := run.sum
	checkBreakdown(t, sum)
	kv := sum.Metrics.KVTransfer
	if kv == nil || kv.TransferMs.Count != sum.Metrics.Completed || !(kv.WaitMs.P99 > 0) || sum.Metrics.Preemptions == 0 {
		t.Errorf("KV transfers %+v for %d completed, %d preemptions: want every request transferred, some waiting for blocks, some preemptions", kv, sum.Metrics.Completed, sum.Metrics.Preemptions)
	}
	roles := map[string]int{}
	for _, r := range sum.Replicas {
		roles[r.Role]++
		if r.Steps == 0 {
			t.Errorf("%s %d never ran", r.Role, r.Replica)
		}
	}
	if roles[RolePrefill] != 2 || roles[RoleDecode] != 3 || len(sum.Breakdown) != 2 || sum.DecodeCostModel == nil || sum.DecodeMemory == nil {
		t.Errorf("roles %v, %d breakdowns, decode cost model %v", roles, len(sum.Breakdown), sum.DecodeCostModel != nil)
	}
	for _, r := range run.rows {
		if r.Status == runresult.StatusCompleted && !(r.KVTransferMs > 0 && r.KVTransferMs < r.TTFTMs) {
			t.Fatalf("request %d: transfer %g ms, TTFT %g ms", r.RequestID, r.KVTransferMs, r.TTFTMs)
		}
	}

	// The same run through Execute: the Chrome trace holds one transfer per
	// completed request and names the instances.
	dir := t.TempDir()
	cfg.Workload.NumRequests = 200
	src, _, err := openSource(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Execute(mustResolve(t, cfg), src, Outputs{Dir: dir, ChromeTrace: filepath.Join(dir, "trace.json")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("chrome trace: %v", err)
	}
	transfers, names := 0, map[string]bool{}
	for _, e := range doc.TraceEvents {
		if e["name"] == "kv_transfer" && e["ph"] == "b" {
			transfers++
		}
		if e["name"] == "process_name" {
			names[e["args"].(map[string]any)["name"].(string)] = true
		}
	}
	if transfers != s2.Metrics.Completed || !names["prefill 0"] || !names["decode 4"] || !names["KV links"] {
		t.Errorf("%d transfers in the trace for %d requests; processes %v", transfers, s2.Metrics.Completed, names)
	}
	rows, err := runresult.ReadRequestMetrics(filepath.Join(dir, runresult.RequestsCSVFile))
	if err != nil || len(rows) != 200 || !(rows[0].KVTransferMs > 0) {
		t.Errorf("requests.csv: %d rows, first transfer %v ms, %v", len(rows), rows[0].KVTransferMs, err)
	}
}

// MoE instances with their own expert-parallel layouts.
func TestDisaggregatedMoE(t *testing.T) {
	cfg := testConfig()
	cfg.Model = "qwen3-30b-a3b"
	cfg.Mode = runresult.ModeDisaggregated
	cfg.Disaggregation = runresult.DisaggregationConfig{PrefillLayout: spec.Layout{TP: 8, EP: 8}, DecodeLayout: spec.Layout{TP: 4, EP: 4}, DecodeInstances: 2}
	sum, sink, _, _ := simulate(t, cfg, reqs([3]float64{0, 3000, 20}, [3]float64{0.01, 200, 40}, [3]float64{0.02, 800, 10}))
	if sum.Metrics.Completed != 3 || sum.CostModel.MoE == nil || sum.DecodeCostModel.MoE == nil {
		t.Fatalf("%d completed; MoE reports %v %v", sum.Metrics.Completed, sum.CostModel.MoE, sum.DecodeCostModel.MoE)
	}
	d := sum.Config.Disaggregation
	if d.PrefillInstances != 1 || d.DecodeInstances != 2 || d.KVLinkGBps != 400 || d.KVLinkLatencyUs != 50 {
		t.Errorf("resolved disaggregation %+v: want 1 prefill instance, a 8 x 50 GB/s link and 50 us", d)
	}
	for _, r := range sink.rows {
		if !(r.KVTransferMs > 0) {
			t.Errorf("request %d: transfer %g ms", r.RequestID, r.KVTransferMs)
		}
	}
}

func TestDisaggregationConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		apply func(*runresult.Config)
		want  string
	}{
		{"DP instead of instances", func(c *runresult.Config) { c.Mode = runresult.ModeDisaggregated; c.Layout.DP = 2 }, "--prefill-instances"},
		{"DP in an instance", func(c *runresult.Config) {
			c.Mode = runresult.ModeDisaggregated
			c.Disaggregation.DecodeLayout = spec.Layout{TP: 1, DP: 2}
		}, "decode instances"},
		{"negative instances", func(c *runresult.Config) { c.Mode = runresult.ModeDisaggregated; c.Disaggregation.DecodeInstances = -1 }, "decode_instances"},
		{"negative latency", func(c *runresult.Config) { c.Mode = runresult.ModeDisaggregated; c.Disaggregation.KVLinkLatencyUs = -1 }, "kv_link_latency_us"},
		{"settings without the mode", func(c *runresult.Config) { c.Disaggregation.PrefillInstances = 2 }, "need mode disaggregated"},
		{"unknown mode", func(c *runresult.Config) { c.Mode = "split" }, "unknown mode"},
	} {
		cfg := testConfig()
		tc.apply(&cfg)
		if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
