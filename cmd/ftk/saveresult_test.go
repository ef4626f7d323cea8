package main

import (
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// benchServeKeys are the field names of a real vllm bench serve
// --save-result file: the first record of vllm-benchmark-graphs/results.json
// in github.com/nerdalert/vllm-bench-automation at commit
// 257d8425d44db7df73e3bba879d41d11c10d02ea (benchmark_serving.py of May
// 2025, run against an llm-d deployment), less the keys its --metadata
// added (deployment, gpu, model, gateway, prefill_replicas,
// decode_replicas, input_len, output_len), its "date" (a simulation has no
// wall-clock date) and its "request_goodput:" (a typo of that script
// version; vLLM's serve.py writes request_goodput, listed below). Only the
// key list is kept here.
var benchServeKeys = []string{
	"backend", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness", "max_concurrency",
	"duration", "completed", "total_input_tokens", "total_output_tokens", "request_throughput",
	"output_throughput", "total_token_throughput",
	"mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
	"mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p99_tpot_ms",
	"mean_itl_ms", "median_itl_ms", "std_itl_ms", "p99_itl_ms",
}

// serveKeys are keys the current vllm bench serve writes besides
// (vllm/benchmarks/serve.py of vllm-project/vllm at commit
// 009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1: its result dict, and
// process_one_metric's names for --percentile-metrics e2el and
// --metric-percentiles 50,90,95).
var serveKeys = []string{
	"endpoint_type", "label", "failed", "request_goodput", "max_concurrent_requests",
	"p50_ttft_ms", "p90_ttft_ms", "p95_ttft_ms",
	"mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p50_e2el_ms", "p90_e2el_ms", "p95_e2el_ms", "p99_e2el_ms",
}

// TestSaveResult: simulate --save-result writes vllm bench serve's field
// names, with ftk's metric definitions (which are vLLM's): the values are
// those of summary.json and of the per-request rows.
func TestSaveResult(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "bench.json")
	args := []string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:512x64", "--request-rate", "6", "--num-prompts", "60",
		"-o", filepath.Join(dir, "out"), "--save-result", res}
	if _, errOut, code := ftk(t, args...); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut)
	}
	first, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(first, &got); err != nil {
		t.Fatalf("%s: %v", res, err)
	}
	for _, k := range append(append([]string{}, benchServeKeys...), serveKeys...) {
		if _, ok := got[k]; !ok {
			t.Errorf("--save-result lacks vllm bench serve's %q", k)
		}
	}
	var sum runresult.Summary
	data, err := os.ReadFile(filepath.Join(dir, "out", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	m := sum.Metrics
	num := func(k string) float64 { f, _ := got[k].(float64); return f }
	for _, c := range []struct {
		key  string
		want float64
	}{
		{"completed", float64(m.Completed)}, {"num_prompts", 60}, {"request_rate", 6}, {"duration", m.MakespanS},
		{"total_input_tokens", float64(m.PromptTokens)}, {"total_output_tokens", float64(m.OutputTokens)},
		{"request_throughput", float64(m.Completed) / m.MakespanS},
		{"output_throughput", float64(m.OutputTokens) / m.MakespanS},
		{"total_token_throughput", float64(m.PromptTokens+m.OutputTokens) / m.MakespanS},
		{"mean_ttft_ms", m.TTFTMs.Mean}, {"median_ttft_ms", m.TTFTMs.P50}, {"p99_ttft_ms", m.TTFTMs.P99},
		{"mean_tpot_ms", m.TPOTMs.Mean}, {"p99_itl_ms", m.ITLMs.P99}, {"mean_e2el_ms", m.E2EMs.Mean},
	} {
		if g := num(c.key); math.Abs(g-c.want) > 1e-9*math.Max(1, math.Abs(c.want)) {
			t.Errorf("%s = %v, want %v", c.key, g, c.want)
		}
	}
	if got["model_id"] != "meta-llama/Llama-3.1-8B-Instruct" || got["backend"] != runresult.BenchServeBackend {
		t.Errorf("model_id %v, backend %v", got["model_id"], got["backend"])
	}
	// std is numpy's np.std (population) over the requests' values.
	f, err := os.Open(filepath.Join(dir, "out", "requests.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, metric := range []string{"ttft", "tpot", "e2e"} {
		var v []float64
		for _, r := range rows[1:] {
			if x, err := strconv.ParseFloat(r[col[metric+"_ms"]], 64); err == nil && !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		var mean, ss float64
		for _, x := range v {
			mean += x / float64(len(v))
		}
		for _, x := range v {
			ss += (x - mean) * (x - mean)
		}
		key := "std_" + metric + "_ms"
		if metric == "e2e" {
			key = "std_e2el_ms"
		}
		if want := math.Sqrt(ss / float64(len(v))); math.Abs(num(key)-want) > 1e-6*want || want == 0 {
			t.Errorf("%s = %v, want %v (population std of %d requests)", key, num(key), want, len(v))
		}
	}
	// Same inputs, same bytes.
	if _, errOut, code := ftk(t, args...); code != 0 {
		t.Fatalf("simulate again: exit %d: %s", code, errOut)
	}
	if again, _ := os.ReadFile(res); string(again) != string(first) {
		t.Error("a second run wrote other bytes")
	}
}
