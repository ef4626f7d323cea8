package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
