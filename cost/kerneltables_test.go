package cost

import (
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Each op of qwen3-30b-a3b at TP1 on H100 is priced by the table row of
// its own shape: the output projection by gemm_perf's bfloat16 row (M
// tokens, N 2048, K 4096), decode attention by generation_attention_perf's
// row of 32 query and 4 KV heads, the fused MoE by moe_perf's balanced row
// of the model's experts; norms fall back.
func TestKernelTablesPriceOpsByShape(t *testing.T) {
	m, err := spec.LookupModel("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := spec.LookupDevice("h100")
	kt, err := LoadKernelTables("../testdata/aiconfigurator/h100_sxm", "0.14.0", m, d)
	if err != nil {
		t.Fatal(err)
	}
	dir := "../testdata/aiconfigurator/h100_sxm/"
	gemm, err := kerneldb.ReadTable(dir + "gemm/vllm/0.14.0/gemm_perf.parquet")
	if err != nil {
		t.Fatal(err)
	}
	gen, err := kerneldb.ReadTable(dir + "attention/vllm/0.14.0/generation_attention_perf.parquet")
	if err != nil {
		t.Fatal(err)
	}
	moe, err := kerneldb.ReadTable(dir + "moe/vllm/0.14.0/moe_perf.parquet")
	if err != nil {
		t.Fatal(err)
	}
	var wantGEMM, wantDecode, wantMoE float64
	for _, r := range gemm.GEMM {
		if r.Dtype == "bfloat16" && r.M == 1024 && r.N == 2048 && r.K == 4096 {
			wantGEMM = r.LatencyMs
		}
	}
	for _, r := range gen.Attention {
		if r.Batch == 32 && r.KVLen() == 1024 && r.Heads == 32 && r.KVHeads == 4 && r.HeadDim == 128 && r.KVCacheDtype == "bfloat16" {
			wantDecode = r.LatencyMs
		}
	}
	for _, r := range moe.MoE {
		if r.Dtype == "bfloat16" && r.Distribution == "balanced" && r.NumTokens == 256 && r.Hidden == 2048 && r.InterSize == 768 &&
			r.TopK == 8 && r.Experts == 128 && r.MoETP == 1 && r.MoEEP == 1 {
			wantMoE = r.LatencyMs
		}
	}
	if wantGEMM == 0 || wantDecode == 0 || wantMoE == 0 {
		t.Fatalf("fixture rows missing: gemm %v, decode %v, moe %v", wantGEMM, wantDecode, wantMoE)
	}
	ops := spec.LayerOps(m, spec.Layout{TP: 1}, 0)
	find := func(name string) *spec.Op {
		for i := range ops {
			if ops[i].Name == name {
				return &ops[i]
			}
		}
		t.Fatalf("no op %s", name)
		return nil
	}
	for _, tc := range []struct {
		op   string
		x    []float64
		want float64
	}{
		{spec.OpAttnPostProj, []float64{1024}, wantGEMM},
		{spec.OpAttnDecode, []float64{32, 1023}, wantDecode},
		{spec.OpMoEGroupedGEMM, []float64{256 * 8, 16}, wantMoE},
		{spec.OpMoEShuffling, []float64{256}, 0},
	} {
		p, ok := kt.OpPredictor(find(tc.op))
		if !ok {
			t.Errorf("%s: not priced by the tables", tc.op)
			continue
		}
		if got := p.PredictMs(tc.x); got != tc.want {
			t.Errorf("%s at %v: %v ms, want the table row's %v", tc.op, tc.x, got, tc.want)
		}
	}
	if _, ok := kt.OpPredictor(find(spec.OpInputLayernorm)); ok {
		t.Error("input_layernorm priced by tables that hold no norm")
	}
	// An MLA model's attention comes from the MLA kernel tables: DeepSeek-V3
	// at TP1 decodes with 128 heads on the GPU, a measured row.
	ds, err := spec.LookupModel("deepseek-v3")
	if err != nil {
		t.Fatal(err)
	}
	dkt, err := LoadKernelTables("../testdata/aiconfigurator/h100_sxm", "0.14.0", ds, d)
	if err != nil {
		t.Fatal(err)
	}
	dec, ok := findLayerOp(spec.LayerOps(ds, spec.Layout{TP: 1}, 0), spec.OpAttnDecode)
	if !ok {
		t.Fatal("no attn_decode")
	}
	p, ok := dkt.OpPredictor(&dec)
	if !ok {
		t.Fatal("DeepSeek-V3's attn_decode not priced by the MLA tables")
	}
	if got := p.PredictMs([]float64{1, 1}); got != 0.11082667112350464 {
		t.Errorf("DeepSeek-V3 decode of one sequence at KV length 2: %v ms, want generation_mla_perf's 0.11082667 ms", got)
	}
}

// Qwen3's QKV projection runs its Q/K norms beside the GEMM: from the
// tables it costs the GEMM table's time plus the device model's norms
// (the op less its GEMM), never the GEMM alone.
func TestKernelTablesAddQKNorms(t *testing.T) {
	m, err := spec.LookupModel("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := spec.LookupDevice("h100")
	kt, err := LoadKernelTables("../testdata/aiconfigurator/h100_sxm", "0.14.0", m, d)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: spec.Layout{TP: 1}, Device: d, Limits: testLimits, Predictors: kt, MoE: runresult.MoEConfig{Routing: runresult.RoutingEven}})
	if err != nil {
		t.Fatal(err)
	}
	var qkv *pricedOp
	for i := range cm.stages[0].tokens.ops {
		if p := &cm.stages[0].tokens.ops[i]; p.op.Name == spec.OpAttnPreProj {
			qkv = p
		}
	}
	if qkv == nil || qkv.op.QHeads == 0 {
		t.Fatal("no QKV projection with Q/K norms")
	}
	gemmMs, _ := kt.K.GEMM("bfloat16", 64, float64(qkv.op.N), float64(qkv.op.K))
	got := qkv.pred.PredictMs([]float64{64})
	if !(got > gemmMs) || got > 2*gemmMs {
		t.Errorf("QKV projection of 64 tokens: %v ms; the GEMM table gives %v ms, the norms must add to it (less than the GEMM again)", got, gemmMs)
	}
}
