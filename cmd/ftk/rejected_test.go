package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// TestAllRejectedNullPercentiles: a run whose every request is longer than
// max_model_len (Llama-2-7B: 4096 positions; 5,010-token requests) has no
// latency to report, and summary.json says null for every mean and
// percentile, not 0 ms; the file still reads back.
func TestAllRejectedNullPercentiles(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := ftk(t, "simulate", "--model", "llama-2-7b", "--workload", "fixed:5000x10", "--rate", "1", "--num-requests", "3", "-o", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Metrics map[string]json.RawMessage `json:"metrics"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"} {
		var st map[string]any
		if err := json.Unmarshal(raw.Metrics[name], &st); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, k := range []string{"mean", "p50", "p90", "p95", "p99"} {
			if v, ok := st[k]; !ok || v != nil {
				t.Errorf("%s.%s = %v, want null", name, k, v)
			}
		}
		if st["count"] != 0.0 {
			t.Errorf("%s.count = %v, want 0", name, st["count"])
		}
	}
	sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if m := sum.Metrics; m.Rejected != 3 || m.Completed != 0 || m.TTFTMs.Count != 0 {
		t.Errorf("read back: %d rejected, %d completed, TTFT count %d", m.Rejected, m.Completed, m.TTFTMs.Count)
	}
}
