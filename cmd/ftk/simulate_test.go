package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

func TestSimulateRuns(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--device", "h100", "--replicas", "2",
		"--workload", "fixed:512x32", "--rate", "20", "--num-requests", "200", "--seed", "5",
		"--max-num-seqs", "64", "-o", dir, "--chrome-trace", filepath.Join(dir, "trace.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"TTFT", "TPOT", "ITL", "E2E", "200 arrived, 200 completed", "roofline", "2 replica(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if c := sum.Config; c.Layout.DP != 2 || c.Engine.MaxNumSeqs != 64 || c.Workload.Seed != 5 || len(sum.Replicas) != 2 {
		t.Errorf("summary config %+v, %d replicas", c, len(sum.Replicas))
	}
	for _, f := range []string{runresult.RequestsCSVFile, runresult.RequestsArrowFile, runresult.ConfigFile, "trace.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	// The run's config.yaml reproduces it; a flag overrides it.
	dir2 := t.TempDir()
	out2, errOut, code := ftk(t, "simulate", "--config", filepath.Join(dir, runresult.ConfigFile), "-o", dir2, "--max-num-seqs", "8")
	if code != 0 {
		t.Fatalf("rerun exit %d: %s", code, errOut)
	}
	sum2, err := runresult.ReadSummary(filepath.Join(dir2, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum2.Config.Engine.MaxNumSeqs != 8 || sum2.Config.Workload != sum.Config.Workload || out2 == out {
		t.Errorf("rerun config %+v", sum2.Config)
	}
}

func TestSimulateBadInput(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(trace, []byte("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,10\n1,10,0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	yaml := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(yaml, []byte("model: llama-3.1-8b\nengine:\n  max_batched_tokens: 100\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown option", []string{"--model", "llama-3.1-8b", "--max-batched-tokens", "100"}, 2, "max-batched-tokens"},
		{"unknown option in config", []string{"--config", yaml}, 2, "unknown option max_batched_tokens"},
		{"no model", []string{"--workload", "fixed:10x10", "--num-requests", "1"}, 2, "needs --model"},
		{"no arrivals", []string{"--model", "llama-3.1-8b"}, 2, "--trace FILE or --workload"},
		{"trace and workload", []string{"--model", "llama-3.1-8b", "--trace", trace, "--workload", "fixed:1x1"}, 2, "not both"},
		{"zero output tokens", []string{"--model", "llama-3.1-8b", "--trace", trace}, 1, "bad.csv:3"},
		{"missing trace", []string{"--model", "llama-3.1-8b", "--trace", filepath.Join(dir, "none.csv")}, 1, "none.csv"},
		{"weights do not fit", []string{"--model", "llama-3.3-70b", "--workload", "fixed:10x10", "--num-requests", "1"}, 1, "weights need"},
		{"bad block size", []string{"--model", "llama-3.1-8b", "--workload", "fixed:10x10", "--num-requests", "1", "--block-size", "0"}, 2, "invalid value \"0\" for --block-size: want 1 or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, errOut, code := ftk(t, append([]string{"simulate", "-o", out}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, errOut, tc.want)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("error is not one line: %q", errOut)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a failed run created %s", out)
			}
		})
	}
}

// An MoE run in eager mode prints where step time goes (device ops, launch
// beyond the GPU, host time); the same run with CUDA graphs replays its
// decode steps; the config records both.
func TestSimulateMoEBreakdown(t *testing.T) {
	for _, mode := range []string{"eager", "cuda-graph"} {
		dir := t.TempDir()
		out, errOut, code := ftk(t, "simulate", "--model", "qwen3-30b-a3b", "--device", "h100", "--tp", "1", "--ep", "8", "--dp", "8",
			"--execution-mode", mode, "--breakdown", "--moe-routing", "skewed", "--all2all-backend", "pplx",
			"--workload", "fixed:512x32", "--rate", "8", "--num-requests", "40", "--seed", "1", "-o", dir)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errOut)
		}
		for _, want := range []string{"step time, replica engines", "moe", "ep_comm", "host issue (beyond GPU)", "host before", "host after",
			"host-bound", "CUDA-graph replays", "routing skewed (Zipf exponent 0.2)", "EP communication pplx", "prefill_hot", "default host model"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", mode, want, out)
			}
		}
		sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		graphs := sum.Breakdown[0].GraphSteps
		if sum.Config.Engine.ExecutionMode != mode || sum.CostModel.ExecutionMode != mode || (graphs > 0) != (mode == "cuda-graph") {
			t.Errorf("%s: config %q, cost model %q, %d graph steps", mode, sum.Config.Engine.ExecutionMode, sum.CostModel.ExecutionMode, graphs)
		}
	}
}

// A disaggregated run with per-instance layouts and a KV link.
func TestSimulateDisaggregated(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--mode", "disaggregated", "--prefill-tp", "2",
		"--decode-instances", "2", "--kv-link-gbps", "25", "--kv-link-latency-us", "80", "--async-scheduling", "--breakdown",
		"--workload", "fixed:1024x32", "--rate", "10", "--num-requests", "50", "--seed", "3", "-o", dir, "--chrome-trace", filepath.Join(dir, "trace.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"disaggregated: 1 prefill instance(s) TP2/PP1/EP1/DP1, 2 decode instance(s) TP1/PP1/EP1/DP1",
		"25 GB/s", "KV transfer", "step time, prefill engines", "step time, decode engines", "wait for decode blocks", "50 arrived, 50 completed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	d := sum.Config.Disaggregation
	if d.PrefillLayout.TP != 2 || d.DecodeLayout.TP != 1 || d.DecodeInstances != 2 || d.KVLinkGBps != 25 || !sum.Config.Engine.AsyncScheduling {
		t.Errorf("config %+v", sum.Config)
	}
	// The run's config.yaml reproduces it.
	dir2 := t.TempDir()
	if _, errOut, code := ftk(t, "simulate", "--config", filepath.Join(dir, runresult.ConfigFile), "-o", dir2); code != 0 {
		t.Fatalf("rerun exit %d: %s", code, errOut)
	}
	a, _ := os.ReadFile(filepath.Join(dir, runresult.RequestsCSVFile))
	b, _ := os.ReadFile(filepath.Join(dir2, runresult.RequestsCSVFile))
	if string(a) != string(b) {
		t.Error("rerunning config.yaml gave different requests.csv")
	}
}

func TestSimulateNewOptionsBadInput(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "hist.csv")
	if err := os.WriteFile(hist, []byte("layer,expert,tokens\n0,1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"--workload", "fixed:10x10", "--num-requests", "1"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown execution mode", []string{"--model", "llama-3.1-8b", "--execution-mode", "graphs"}, exitUsage, `invalid value "graphs" for --execution-mode: want eager, cuda-graph, piecewise or full-and-piecewise`},
		{"replay without histogram", []string{"--model", "qwen3-30b-a3b", "--tp", "8", "--ep", "8", "--moe-routing", "replay"}, exitUsage, "needs a histogram"},
		{"bad histogram", []string{"--model", "qwen3-30b-a3b", "--tp", "8", "--ep", "8", "--moe-routing", "replay", "--moe-histogram", hist}, exitRuntime, "hist.csv line 2 column tokens"},
		{"unknown backend", []string{"--model", "qwen3-30b-a3b", "--tp", "8", "--ep", "8", "--all2all-backend", "mpi"}, exitUsage, `invalid value "mpi" for --all2all-backend: want naive`},
		{"unknown mode", []string{"--model", "llama-3.1-8b", "--mode", "split"}, exitUsage, `invalid value "split" for --mode: want colocated or disaggregated`},
		{"instance layout", []string{"--model", "llama-3.1-8b", "--mode", "disaggregated", "--decode-tp", "3"}, exitRuntime, "decode instances"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			_, errOut, code := ftk(t, append(append([]string{"simulate", "-o", out}, tc.args...), base...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q (want exit %d and %q)", code, errOut, tc.code, tc.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a failed run created %s", out)
			}
		})
	}
}

// --kv-cache-dtype fp8 halves the KV bytes per token: twice the blocks in
// the same memory; an unknown dtype is refused with the accepted ones.
func TestSimulateKVCacheDtype(t *testing.T) {
	blocks := func(dtype string) string {
		args := []string{"simulate", "--model", "llama-3.1-8b", "--device", "h100", "--workload", "fixed:256x16",
			"--rate", "10", "--num-requests", "20", "--seed", "1", "-o", t.TempDir()}
		if dtype != "" {
			args = append(args, "--kv-cache-dtype", dtype)
		}
		out, errOut, code := ftk(t, args...)
		if code != 0 {
			t.Fatalf("--kv-cache-dtype %q: exit %d: %s", dtype, code, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "KV cache") {
				return strings.Fields(line)[2]
			}
		}
		t.Fatalf("no KV cache line:\n%s", out)
		return ""
	}
	bf16, fp8 := blocks(""), blocks("fp8")
	var b, f int
	fmt.Sscan(bf16, &b)
	fmt.Sscan(fp8, &f)
	if b == 0 || f != 2*b {
		t.Errorf("KV blocks: %d with BF16, %d with fp8; want twice", b, f)
	}
	_, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--kv-cache-dtype", "int3", "--workload", "fixed:8x8", "--num-requests", "2", "-o", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, `invalid value "int3" for --kv-cache-dtype: want auto, bfloat16, fp8, fp8_e4m3 or fp8_e5m2`) {
		t.Errorf("int3: exit %d, %s", code, errOut)
	}
}
