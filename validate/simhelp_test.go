package validate

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
)

// sharedConvTrace is the Splitwise conversation trace of testdata.
const sharedConvTrace = "../testdata/traces/splitwise_conv.csv"

// testWorkloads are workloads of different shapes: short prompts at a high
// rate, long prompts, and the real conversation trace. scale multiplies
// their request counts (1: about 1000 requests in all).
func testWorkload(name string, scale float64) runresult.WorkloadConfig {
	n := func(k int) int { return max(10, int(float64(k)*scale)) }
	switch name {
	case "short":
		return runresult.WorkloadConfig{Workload: "fixed:256x96", RatePerS: 10, NumRequests: n(400), Seed: 1}
	case "long":
		return runresult.WorkloadConfig{Workload: "fixed:3072x48", RatePerS: 3, NumRequests: n(150), Seed: 2}
	case "conv":
		return runresult.WorkloadConfig{Trace: sharedConvTrace, NumRequests: n(400)}
	}
	panic("unknown test workload " + name)
}

func testConfig(t testing.TB, workload runresult.WorkloadConfig, cal runresult.Calibration) runresult.Config {
	t.Helper()
	if _, err := os.Stat(sharedConvTrace); err != nil {
		t.Fatalf("testdata beside the repository is required: %v", err)
	}
	cfg := runresult.DefaultConfig()
	cfg.Model = "llama-3.1-8b"
	cfg.Device = "h100"
	cfg.Workload = workload
	cfg.Calibration = cal
	return cfg
}

// simulateTo runs the workload with cal through ftk simulate's Go API into
// dir/name and returns the output directory.
func simulateTo(t testing.TB, dir, name string, workload runresult.WorkloadConfig, cal runresult.Calibration) string {
	t.Helper()
	return simulateConfigTo(t, dir, name, testConfig(t, workload, cal))
}

// simulateConfigTo runs cfg through ftk simulate's Go API into dir/name and
// returns the output directory.
func simulateConfigTo(t testing.TB, dir, name string, cfg runresult.Config) string {
	t.Helper()
	src, _, err := datasets.OpenRun(cfg.Workload.Trace, cfg.Workload.Workload, cfg.Workload.RatePerS, cfg.Workload.NumRequests, cfg.Workload.Seed)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name)
	r, err := simulate.Resolve(cfg, simulate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := simulate.Execute(r, src, simulate.Outputs{Dir: out}, simulate.Options{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// writeMeasuredCSV exports a simulation's per-request metrics as a measured
// per-request CSV, multiplying every TPOT by tpotFactor.
func writeMeasuredCSV(t testing.TB, simDir, path string, tpotFactor float64) {
	t.Helper()
	rows, err := runresult.ReadRequestMetrics(filepath.Join(simDir, runresult.RequestsCSVFile))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := csv.NewWriter(f)
	w.Write([]string{"request_id", "arrival_s", "prompt_tokens", "output_tokens", "ttft_ms", "tpot_ms", "e2e_ms", "status"})
	g := func(v float64) string {
		if v != v {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, m := range rows {
		w.Write([]string{strconv.Itoa(m.RequestID), g(m.ArrivalS), strconv.Itoa(m.PromptTokens), strconv.Itoa(m.OutputTokens),
			g(m.TTFTMs), g(m.TPOTMs * tpotFactor), g(m.E2EMs), m.Status})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		t.Fatal(err)
	}
}
