package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVLLMFlagAliases: vLLM's engine and benchmark flag names run the
// same simulation as ftk's (config.yaml, which records every setting, is
// the same bytes). The meanings, read from vLLM's source: engine arguments
// in vllm/engine/arg_utils.py (--tensor-parallel-size, --data-parallel-size,
// --pipeline-parallel-size, --enable-expert-parallel: EP over TP x DP
// GPUs, --enforce-eager: no CUDA graphs, --no-enable-chunked-prefill);
// vllm bench serve's in vllm/benchmarks/serve.py (--request-rate: Poisson
// arrivals, inf sending every request at t=0; --num-prompts: the requests;
// --max-concurrency: most requests in flight).
func TestVLLMFlagAliases(t *testing.T) {
	dir := t.TempDir()
	base := []string{"simulate", "--workload", "fixed:64x16", "--seed", "3"}
	config := func(name string, args ...string) string {
		t.Helper()
		out := filepath.Join(dir, name)
		if _, errOut, code := ftk(t, append(append(append([]string{}, base...), "-o", out), args...)...); code != 0 {
			t.Fatalf("%s %v: exit %d: %s", name, args, code, errOut)
		}
		b, err := os.ReadFile(filepath.Join(out, "config.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name       string
		vllm, ftks []string
	}{
		{"dense", []string{"--model", "meta-llama/Llama-3.1-8B-Instruct", "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2", "--data-parallel-size", "2",
			"--request-rate", "4", "--num-prompts", "12", "--max-concurrency", "3", "--enforce-eager", "--no-enable-chunked-prefill"},
			[]string{"--model", "llama-3.1-8b", "--tp", "2", "--pp", "2", "--dp", "2", "--rate", "4", "--num-requests", "12", "--clients", "3",
				"--execution-mode", "eager", "--enable-chunked-prefill=false"}},
		{"expert parallel", []string{"--model", "Qwen/Qwen3-30B-A3B", "--tensor-parallel-size", "2", "--enable-expert-parallel", "--num-prompts", "8", "--request-rate", "2"},
			[]string{"--model", "qwen3-30b-a3b", "--tp", "2", "--ep", "2", "--num-requests", "8", "--rate", "2"}},
		{"request rate inf", []string{"--model", "llama-3.1-8b", "--request-rate", "inf", "--num-prompts", "8"},
			[]string{"--model", "llama-3.1-8b", "--num-requests", "8"}},
		{"kv offloading", []string{"--model", "llama-3.1-8b", "--num-prompts", "8", "--kv-offloading-backend", "native", "--kv-offloading-size", "4"},
			[]string{"--model", "llama-3.1-8b", "--num-requests", "8", "--kv-offloading-size", "4"}},
	} {
		v, f := config(tc.name+"-vllm", tc.vllm...), config(tc.name+"-ftk", tc.ftks...)
		if v != f {
			t.Errorf("%s: vLLM's flags give\n%s\nftk's give\n%s", tc.name, v, f)
		}
	}
	// vLLM's LMCache backend is not modelled: refused, naming it.
	if _, errOut, code := ftk(t, append(append([]string{}, base...), "--model", "llama-3.1-8b", "--num-requests", "2", "--kv-offloading-size", "4",
		"--kv-offloading-backend", "lmcache", "-o", filepath.Join(dir, "lmcache"))...); code != exitUsage || !strings.Contains(errOut, "lmcache is not modelled") {
		t.Errorf("--kv-offloading-backend lmcache: exit %d, stderr %q; want a usage error naming it", code, errOut)
	}
	// Flags that contradict each other are refused, not silently resolved.
	for _, args := range [][]string{
		{"--model", "qwen3-30b-a3b", "--tp", "2", "--ep", "4", "--enable-expert-parallel", "--num-requests", "2"},
		{"--model", "llama-3.1-8b", "--enforce-eager", "--execution-mode", "cuda-graph", "--num-requests", "2"},
	} {
		if _, errOut, code := ftk(t, append(append([]string{}, base...), append(args, "-o", filepath.Join(dir, "bad"))...)...); code != exitUsage || !strings.Contains(errOut, "give one of them") {
			t.Errorf("%v: exit %d, stderr %q; want a usage error", args, code, errOut)
		}
	}
}

// TestHubIDModels: every command that takes --model takes a catalog
// model's Hugging Face id.
func TestHubIDModels(t *testing.T) {
	for _, args := range [][]string{
		{"models", "show", "meta-llama/Llama-3.3-70B-Instruct", "--tp", "4"},
		{"collect", "linear", "--model", "meta-llama/Llama-2-7b-hf", "--device", "h100", "--plan-only"},
	} {
		if _, errOut, code := ftk(t, args...); code != 0 {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}
