package main

import (
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// The rate search calls "ok" holds over a run ten times as long as its
// probes: issue 33's shape (llama-3.1-8b on one H100, splitwise-conv,
// probes of 2,000 requests, a loose TTFT target) once chose 21.5 req/s,
// which the simulator then reports overloaded over 20,000 requests (20.5
// completed, TTFT P95 31 s).
func TestSearchRateHoldsOverALongerRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "search")
	if _, errOut, code := ftk(t, "search", "--model", "llama-3.1-8b", "--workload", "splitwise-conv", "--gpus", "h100:1",
		"--slo", "ttft_p95_ms=2000,tpot_p95_ms=200", "--max-num-seqs", "256", "--max-num-batched-tokens", "8192",
		"--execution-modes", "cuda-graph", "--num-requests", "2000", "-o", out); code != 0 {
		t.Fatalf("search: exit %d: %s", code, errOut)
	}
	cfg := filepath.Join(out, "candidates", "h100-tp1pp1ep1-dp1-s256-b8192-cuda-graph", runresult.ConfigFile)
	long := filepath.Join(dir, "long")
	if _, errOut, code := ftk(t, "simulate", "--config", cfg, "--num-requests", "20000", "-o", long); code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, errOut)
	}
	sum, err := runresult.ReadSummary(filepath.Join(long, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	m := &sum.Metrics
	if m.Overload != nil || !(m.TTFTMs.P95 <= 2000) || !(m.TPOTMs.P95 <= 200) {
		t.Errorf("at the chosen %.4g req/s over 20000 requests: overload %+v, TTFT P95 %.0f ms, TPOT P95 %.1f ms; want no overload and the SLO met",
			sum.Config.Workload.RatePerS, m.Overload, m.TTFTMs.P95, m.TPOTMs.P95)
	}
}
