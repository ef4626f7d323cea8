package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// simulate takes vLLM's --speculative-config JSON and the flags one by one
// to the same run; the summary, config.yaml and --save-result (vllm bench
// serve's spec_decode_* fields) record it; config.yaml reruns it.
func TestSimulateSpeculative(t *testing.T) {
	dir := t.TempDir()
	base := []string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x64", "--rate", "4", "--num-requests", "40"}
	runs := [][]string{
		{"--speculative-config", `{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3, "draft_tensor_parallel_size": 1}`, "--speculative-dataset", "mt-bench"},
		{"--speculative-method", "eagle3", "--num-speculative-tokens", "3", "--speculative-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--speculative-acceptance", "0.7296,0.5208,0.3545"},
	}
	var sums [2][]byte
	for i, r := range runs {
		out := filepath.Join(dir, string(rune('a'+i)))
		args := append(append(append([]string{}, base...), r...), "-o", out, "--save-result", filepath.Join(out, "bench.json"))
		stdout, errOut, code := ftk(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", r, code, errOut)
		}
		if !strings.Contains(stdout, "mean acceptance length") {
			t.Errorf("%v: the summary lacks the acceptance metrics:\n%s", r, stdout)
		}
		var bench map[string]any
		data, _ := os.ReadFile(filepath.Join(out, "bench.json"))
		if err := json.Unmarshal(data, &bench); err != nil {
			t.Fatal(err)
		}
		if l, _ := bench["spec_decode_acceptance_length"].(float64); !(l > 2 && l < 3) {
			t.Errorf("%v: --save-result spec_decode_acceptance_length %v, want about 2.6", r, bench["spec_decode_acceptance_length"])
		}
		if pp, _ := bench["spec_decode_per_position_acceptance_rates"].([]any); len(pp) != 3 {
			t.Errorf("%v: per-position rates %v, want 3", r, bench["spec_decode_per_position_acceptance_rates"])
		}
		s, err := runresult.ReadSummary(filepath.Join(out, runresult.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		sums[i], _ = json.Marshal(s.Metrics)
	}
	// The record's rates and the same rates given: the same run.
	if string(sums[0]) != string(sums[1]) {
		t.Errorf("the JSON config with the mt-bench record and the flags with its rates differ:\n%s\n%s", sums[0], sums[1])
	}
	rerun := filepath.Join(dir, "rerun")
	if _, errOut, code := ftk(t, "simulate", "--config", filepath.Join(dir, "a", runresult.ConfigFile), "-o", rerun); code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, errOut)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a", runresult.RequestsCSVFile))
	b, _ := os.ReadFile(filepath.Join(rerun, runresult.RequestsCSVFile))
	if len(a) == 0 || string(a) != string(b) {
		t.Error("the rerun from config.yaml differs")
	}
}

// Bad speculative settings are usage errors that say what to give; a
// layout ftk does not simulate with speculation is refused.
func TestSimulateSpeculativeUsage(t *testing.T) {
	base := []string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:64x8", "--num-requests", "2", "-o", t.TempDir()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--speculative-method", "medusa", "--num-speculative-tokens", "2"}, "speculative method"},
		{[]string{"--num-speculative-tokens", "2"}, "needs a method"},
		{[]string{"--speculative-method", "eagle"}, "needs --num-speculative-tokens"},
		{[]string{"--speculative-config", `{"method": "eagle", "num_speculative_tokens": 2, "bogus": 1}`}, "unknown key"},
		{[]string{"--speculative-method", "eagle", "--num-speculative-tokens", "2", "--speculative-acceptance", "0.5,0.9"}, "never increase"},
		{[]string{"--speculative-method", "draft_model", "--num-speculative-tokens", "2"}, "draft model"},
	} {
		_, errOut, code := ftk(t, append(append([]string{}, base...), c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q: want a usage error naming %q", c.args, code, errOut, c.want)
		}
	}
	_, errOut, code := ftk(t, append(append([]string{}, base...), "--speculative-method", "eagle", "--num-speculative-tokens", "2", "--pp", "2")...)
	if code == 0 || !strings.Contains(errOut, "pipeline parallelism") {
		t.Errorf("PP 2: exit %d, stderr %q: want a refusal naming pipeline parallelism", code, errOut)
	}
}
