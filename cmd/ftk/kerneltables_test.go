package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// ftk ingest reads an AIConfigurator database (every priced table, every
// version folder) into a copy that ftk simulate --bundle prices from, at
// the vLLM version asked for, recorded in the summary.
func TestIngestAndSimulateKernelTables(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "aiconfigurator", "h100_sxm")
	dir := filepath.Join(t.TempDir(), "h100-kernels")
	_, errOut, code := ftk(t, "ingest", src, "-o", dir)
	if code != 0 {
		t.Fatalf("ingest exit %d: %s", code, errOut)
	}
	for _, want := range []string{"kernel tables of h100_sxm (device h100)", "gemm_perf                    vLLM 0.14.0     26040 rows  kernels: vllm_default 26040",
		"moe_perf                     vLLM 0.14.0     37762 rows", "custom_allreduce_perf        vLLM 0.14.0       138 rows  kernels: vLLM_custom_eager 69, vLLM_custom_graph 69",
		"generation_mla_perf          vLLM 0.14.0      5430 rows", "94319 rows read in 7 table files"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("ingest report lacks %q:\n%s", want, errOut)
		}
	}
	if sum, errOut, code := ftk(t, "ingest", "--summary", dir); code != 0 || !strings.Contains(sum, "gemm_perf                    vLLM 0.14.0     26040 rows") {
		t.Errorf("ingest --summary of the copy: exit %d:\n%s%s", code, sum, errOut)
	}
	for _, f := range []string{"kernel_tables.json", "system.yaml", "gemm/vllm/0.14.0/gemm_perf.parquet", "gemm/vllm/0.14.0/collection_meta.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the copy lacks %s: %v", f, err)
		}
	}
	out := filepath.Join(t.TempDir(), "sim")
	_, errOut, code = ftk(t, "simulate", "--model", "qwen3-30b-a3b", "--device", "h100", "--vllm-version", "0.14.0", "--bundle", dir,
		"--workload", "fixed:512x32", "--num-requests", "16", "--rate", "4", "-o", out)
	if code != 0 {
		t.Fatalf("simulate exit %d: %s", code, errOut)
	}
	var s struct {
		Config struct {
			VLLMVersion string `json:"vllm_version"`
			Engine      struct {
				ExecutionMode   string `json:"execution_mode"`
				AsyncScheduling bool   `json:"async_scheduling"`
			} `json:"engine"`
		} `json:"config"`
		CostModel struct {
			Profiles struct {
				Backends []string `json:"profiling_backends"`
			} `json:"profiles"`
			Fallbacks []struct {
				Op string `json:"op"`
			} `json:"roofline_fallbacks"`
		} `json:"cost_model"`
	}
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Config.VLLMVersion != "0.14.0" || len(s.CostModel.Profiles.Backends) != 1 || s.CostModel.Profiles.Backends[0] != "aiconfigurator" {
		t.Errorf("summary: vllm_version %q, profiling backends %v", s.Config.VLLMVersion, s.CostModel.Profiles.Backends)
	}
	if e := s.Config.Engine; e.ExecutionMode != "full-and-piecewise" || !e.AsyncScheduling {
		t.Errorf("vLLM 0.14.0 defaults: execution mode %q, async scheduling %v; want full-and-piecewise, true", e.ExecutionMode, e.AsyncScheduling)
	}
	for _, f := range s.CostModel.Fallbacks {
		for _, priced := range []string{"attn_pre_proj", "attn_post_proj", "attn_prefill", "attn_decode", "moe_grouped_gemm", "lm_head"} {
			if strings.HasPrefix(f.Op, priced) {
				t.Errorf("%s fell back to the roofline; the tables hold it", f.Op)
			}
		}
	}
	// Tables of another GPU are refused.
	_, errOut, code = ftk(t, "simulate", "--model", "qwen3-30b-a3b", "--device", "b200", "--bundle", dir,
		"--workload", "fixed:512x32", "--num-requests", "4", "-o", filepath.Join(t.TempDir(), "b"))
	if code == 0 || !strings.Contains(errOut, "the simulation is of b200") {
		t.Errorf("h100 tables for a b200 run: exit %d: %s", code, errOut)
	}

	// fit --check-coverage names what the tables price and what falls back.
	out2, errOut, code := ftk(t, "fit", "--bundle", dir, "--check-coverage", "--model", "qwen3-30b-a3b", "--tp", "2")
	if code != 3 {
		t.Errorf("coverage of tables lacking norms: exit %d, want 3: %s", code, errOut)
	}
	for _, want := range []string{"moe_grouped_gemm           exact", "moe_perf bfloat16 [vllm_fused_moe], balanced, hidden 2048, width 768, top-8 of 128, TP2 EP1",
		"all_reduce                 exact", "not in the tables, priced by the built-in device model: emb, input_layernorm, attn_rope"} {
		if !strings.Contains(out2, want) {
			t.Errorf("coverage output lacks %q:\n%s", want, out2)
		}
	}
}

// ftk search prices its candidates from kernel tables (--bundle of an
// AIConfigurator database, at --vllm-version), as simulate does: every
// candidate's config.yaml names the tables, the ranked rate is the tables'
// (not the built-in device model's), and tables of another GPU are refused.
func TestSearchFromKernelTables(t *testing.T) {
	tables := filepath.Join("..", "..", "testdata", "aiconfigurator", "h100_sxm")
	args := func(out, gpus string, extra ...string) []string {
		return append([]string{"search", "--model", "llama-3.1-8b", "--workload", "fixed:1024x128", "--num-requests", "200",
			"--gpus", gpus, "--slo", "ttft_p95_ms=300,tpot_p95_ms=12", "--max-num-seqs", "256", "--max-num-batched-tokens", "8192",
			"--execution-modes", "cuda-graph", "--vllm-version", "0.14.0", "--top", "1", "-o", out}, extra...)
	}
	rate := func(dir string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, "results.csv"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 2 {
			t.Fatalf("results.csv of %s: want one candidate:\n%s", dir, b)
		}
		head, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
		for i, h := range head {
			if h == "rate_rps" {
				return row[i]
			}
		}
		t.Fatalf("results.csv has no rate_rps:\n%s", b)
		return ""
	}
	fromTables, roofline := filepath.Join(t.TempDir(), "t"), filepath.Join(t.TempDir(), "r")
	if _, errOut, code := ftk(t, args(fromTables, "h100:1", "--bundle", tables)...); code != 0 {
		t.Fatalf("search from the tables: exit %d: %s", code, errOut)
	}
	if _, errOut, code := ftk(t, args(roofline, "h100:1")...); code != 0 {
		t.Fatalf("search from the device model: exit %d: %s", code, errOut)
	}
	if a, b := rate(fromTables), rate(roofline); a == "" || a == b {
		t.Errorf("ranked rate from the tables %q, from the device model %q: the tables did not price the search", a, b)
	}
	cfg, err := os.ReadFile(filepath.Join(fromTables, "candidates", "h100-tp1pp1ep1-dp1-s256-b8192-cuda-graph", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg), "aiconfigurator/h100_sxm\n") || !strings.Contains(string(cfg), "vllm_version: 0.14.0") {
		t.Errorf("candidate config.yaml does not name the tables and version:\n%s", cfg)
	}
	if _, errOut, code := ftk(t, args(filepath.Join(t.TempDir(), "b"), "b200:1", "--bundle", tables)...); code == 0 || !strings.Contains(errOut, "the simulation is of b200") {
		t.Errorf("h100 tables for a b200 search: exit %d: %s", code, errOut)
	}
}

// ftk validate calibrate re-simulates runs priced from kernel tables (for
// the run's model, device and vLLM version): a scale of the linear ops'
// (table-priced) time hidden in "measured" runs from the tables is fitted
// back.
func TestValidateCalibrateKernelTables(t *testing.T) {
	tables := filepath.Join("..", "..", "testdata", "aiconfigurator", "h100_sxm")
	dir := t.TempDir()
	truth := filepath.Join(dir, "truth.yaml")
	if err := os.WriteFile(truth, []byte("family_scale:\n  linear_op: 1.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "bench")
	if err := os.MkdirAll(bench, 0o755); err != nil {
		t.Fatal(err)
	}
	fromTables := []string{"--bundle", tables, "--vllm-version", "0.14.0"}
	for i, w := range []struct{ name, spec string }{{"short", "fixed:256x64"}, {"long", "fixed:2048x32"}} {
		m := valSimulate(t, filepath.Join(dir, "truth", w.name), w.spec, i+1, append([]string{"--calibration", truth}, fromTables...)...)
		valCSVFrom(t, m, filepath.Join(bench, "h100-tp1__"+w.name+"__r1.csv"), 1)
		valSimulate(t, filepath.Join(dir, "sim", "h100-tp1__"+w.name), w.spec, i+1, fromTables...)
	}
	cal := filepath.Join(dir, "cal.yaml")
	out, errOut, code := ftk(t, "validate", "calibrate", "-m", bench, "-s", filepath.Join(dir, "sim"),
		"--params", "family_scale.linear_op", "--max-evaluations", "60", "-o", cal)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	c, err := runresult.LoadCalibration(cal)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.FamilyScale["linear_op"]; math.Abs(math.Log(got/1.5)) > math.Log(1.1) {
		t.Errorf("fitted linear_op scale %.3f from runs priced by the tables, injected 1.5:\n%s", got, out)
	}
}
