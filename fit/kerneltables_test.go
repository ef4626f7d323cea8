package fit

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
)

// The H100 vLLM 0.14.0 kernel tables in testdata split into the forests
// BenchmarkCVKernelTables scores, every row in exactly one, and ftk's fit
// of the custom all-reduce rows (graph mode, 69 message sizes and GPU
// counts) cross-validates within 10% on folds grouped by shape.
func TestKernelTableForests(t *testing.T) {
	dir := filepath.Join("..", "testdata", "aiconfigurator", "h100_sxm")
	want := map[string]int{
		"gemm_perf":                 3, // bfloat16, fp8, fp8_block
		"context_attention_perf":    2, // KV bfloat16, fp8
		"generation_attention_perf": 2,
		"moe_perf":                  4, // bfloat16, fp8, fp8_block (fused MoE), int4 (Marlin)
		"custom_allreduce_perf":     2, // graph, eager
	}
	var allReduce *tableSet
	for _, p := range []string{"gemm/vllm/0.14.0/gemm_perf.parquet", "attention/vllm/0.14.0/context_attention_perf.parquet",
		"attention/vllm/0.14.0/generation_attention_perf.parquet", "moe/vllm/0.14.0/moe_perf.parquet", "comm/vllm/0.14.0/custom_allreduce_perf.parquet"} {
		tb, err := kerneldb.ReadTable(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		sets := tableSets(tb)
		n := 0
		for i, s := range sets {
			n += len(s.rows)
			if len(tableFeatures(&sets[i], s.rows[0].X)) != len(s.names)+3 {
				t.Errorf("%s: forest features %v, want the %d columns plus FLOPs, bytes and intensity", s.name, tableFeatures(&sets[i], s.rows[0].X), len(s.names))
			}
			if s.name == "custom_allreduce_perf bfloat16 [vLLM_custom_graph]" {
				allReduce = &sets[i]
			}
		}
		if len(sets) != want[tb.Name] || n != tb.Rows {
			t.Errorf("%s: %d forests of %d rows, want %d of %d", tb.Name, len(sets), n, want[tb.Name], tb.Rows)
		}
		if tb.Name == "gemm_perf" {
			r := tb.GEMM[0]
			if fl, _ := sets[0].work(sets[0].rows[0].X); fl != 2*float64(r.M)*float64(r.N)*float64(r.K) {
				t.Errorf("GEMM %dx%dx%d: %g FLOPs, want 2MNK", r.M, r.N, r.K, fl)
			}
		}
	}
	if allReduce == nil {
		t.Fatal("no graph-mode all-reduce forest")
	}
	folds := groupedFolds(allReduce.rows, 5, 1)
	pred := make([]float64, len(allReduce.rows))
	for f := 0; f < 5; f++ {
		train, test := splitFold(allReduce.rows, folds, f)
		m, _, err := fitTable(allReduce, train, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range test {
			pred[i] = m.predict(allReduce, allReduce.rows[i].X)
		}
	}
	if e := errorStats(pred, allReduce.rows).MAPE; !(e < 10) || math.IsNaN(e) {
		t.Errorf("all-reduce forest: nested CV MAPE %.2f%%, want under 10%% (6.5%% when written)", e)
	}
}
