package spec

import (
	"slices"
	"testing"
)

func TestLayerFLOPsByHand(t *testing.T) {
	m, _ := LookupModel("qwen3-30b-a3b")
	l := Layout{TP: 8, EP: 8}
	// One token through MoE layer 47 on one GPU of TP8/EP8:
	// QKV projection  2 x 2048 x (4 q heads + 2 x 1 kv head) x 128 = 3,145,728
	// output proj     2 x (4 x 128) x 2048                       = 2,097,152
	// router          2 x 2048 x 128                             =   524,288
	// experts: 8 routed tokens over 8 ranks = 1 token on this rank,
	//                 3 GEMMs x 2 x 2048 x 768                    = 9,437,184
	// element-wise: two RMS norms 2 x 4 x 2048 = 16,384; rope and qk-norm
	// 4 x 640 = 2,560; top-k 4 x 128 = 512; causal attention of one token
	// 4 x 512 x 0.5 = 1,024.
	want := 3145728.0 + 2097152 + 524288 + 9437184 + 16384 + 2560 + 512 + 1024
	if got := LayerFLOPs(m, l, 47, 1); got != want {
		t.Errorf("layer FLOPs = %.0f, want %.0f", got, want)
	}
	// GEMMs grow linearly with tokens, causal attention quadratically:
	// doubling 512 tokens adds 4 x 512 x (1024^2 - 512^2)/2 FLOPs on top.
	lin := 2 * LayerFLOPs(m, l, 47, 512)
	quad := 4 * 512 * (1024.0*1024 - 2*512*512) / 2
	if got := LayerFLOPs(m, l, 47, 1024); got != lin+quad {
		t.Errorf("1024-token FLOPs %.0f, want %.0f", got, lin+quad)
	}
}

func TestLayerOpsOrderAndCollectives(t *testing.T) {
	names := func(ops []Op) []string {
		var s []string
		for _, o := range ops {
			s = append(s, o.Name)
		}
		return s
	}
	dense, _ := LookupModel("llama-3.1-8b")
	tp1 := names(LayerOps(dense, Layout{}, 0))
	if slices.Contains(tp1, OpAllReduce) {
		t.Errorf("TP1 layer has an all-reduce: %v", tp1)
	}
	tp2 := LayerOps(dense, Layout{TP: 2}, 0)
	n := 0
	for _, o := range tp2 {
		if o.Name == OpAllReduce {
			n++
			if o.Workers != 2 {
				t.Errorf("all-reduce over %d workers, want 2", o.Workers)
			}
		}
	}
	if n != 2 {
		t.Errorf("TP2 dense layer has %d all-reduces, want 2", n)
	}
	moe, _ := LookupModel("qwen3-30b-a3b")
	// vLLM at DP=1 (TP8 x EP8): no dispatch or combine; every rank holds
	// every token and the TP all-reduce after the experts sums them.
	tpep := names(LayerOps(moe, Layout{TP: 8, EP: 8}, 0))
	if slices.Contains(tpep, OpEPDispatch) || slices.Contains(tpep, OpEPCombine) {
		t.Errorf("TP8/EP8/DP1 MoE layer exchanges tokens, vLLM does not: %v", tpep)
	}
	if tpep[len(tpep)-1] != OpAllReduce {
		t.Errorf("TP8/EP8/DP1 MoE layer does not end in the TP all-reduce: %v", tpep)
	}
	// With data parallelism (DP8 x EP8 at TP1) dispatch and combine wrap
	// the experts, over the whole EP group, and no all-reduce remains.
	dpOps := LayerOps(moe, Layout{TP: 1, EP: 8, DP: 8}, 0)
	ep := names(dpOps)
	for _, want := range []string{OpMoEGatingLinear, OpEPDispatch, OpMoEGroupedGEMM, OpEPCombine} {
		if !slices.Contains(ep, want) {
			t.Errorf("DP8/EP8 MoE layer lacks %s: %v", want, ep)
		}
	}
	if slices.Contains(ep, OpAllReduce) {
		t.Errorf("DP8/EP8/TP1 MoE layer has an all-reduce: %v", ep)
	}
	if i, j := slices.Index(ep, OpEPDispatch), slices.Index(ep, OpMoEGroupedGEMM); i > j {
		t.Errorf("dispatch after the grouped GEMM: %v", ep)
	}
	for _, o := range dpOps {
		if o.Name == OpEPDispatch && (o.Workers != 8 || o.DPRanks != 8) {
			t.Errorf("dispatch over %d workers of %d DP ranks, want 8 and 8", o.Workers, o.DPRanks)
		}
	}
	ds, _ := LookupModel("deepseek-v3")
	if slices.Contains(names(LayerOps(ds, Layout{}, 0)), OpMoEGroupedGEMM) {
		t.Error("DeepSeek-V3 layer 0 is dense but has experts")
	}
	if !slices.Contains(names(LayerOps(ds, Layout{}, 3)), OpSharedUpProj) {
		t.Error("DeepSeek-V3 layer 3 lacks its shared expert")
	}
}

func TestOpFeaturesAndFamilies(t *testing.T) {
	m, _ := LookupModel("qwen3-30b-a3b")
	for _, o := range LayerOps(m, Layout{TP: 8, EP: 8}, 0) {
		if o.Family != OpFamily(o.Name) {
			t.Errorf("%s: family %s, OpFamily says %s", o.Name, o.Family, OpFamily(o.Name))
		}
		x := make([]float64, len(OpFeatures(o.Name)))
		for i := range x {
			x[i] = 64
		}
		if f, b := o.Work(x); f < 0 || b <= 0 {
			t.Errorf("%s: work %g FLOPs %g bytes", o.Name, f, b)
		}
	}
}

func TestPrefillEquivalentKeepsCost(t *testing.T) {
	chunks, ctx := []int{512, 128, 256}, []int{0, 1024, 300}
	kv, c := PrefillEquivalent(chunks, ctx)
	var sq, ck float64
	for i := range chunks {
		sq += float64(chunks[i] * chunks[i])
		ck += float64(chunks[i] * ctx[i])
	}
	if d := c*c - sq; d > 1e-6 || d < -1e-6 {
		t.Errorf("chunk^2 %.1f, want %.1f", c*c, sq)
	}
	if d := c*kv - ck; d > 1e-6 || d < -1e-6 {
		t.Errorf("chunk x kv %.1f, want %.1f", c*kv, ck)
	}
	b, k := DecodeEquivalent([]int{100, 200, 600})
	if b != 3 || k != 300 {
		t.Errorf("decode equivalent (%g, %g), want (3, 300)", b, k)
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{4, 1, 3, 2, 5}
	cases := map[float64]float64{0: 1, 50: 3, 90: 4.6, 100: 5, 25: 2}
	for p, want := range cases {
		if got := Percentile(v, p); got < want-1e-12 || got > want+1e-12 {
			t.Errorf("P%g = %g, want %g", p, got, want)
		}
	}
	r := RequestTimes{ArrivalS: 1, FirstTokenS: 1.5, FinishS: 3.5, OutputTokens: 5}
	if r.TTFTMs() != 500 || r.E2EMs() != 2500 || r.TPOTMs() != 500 {
		t.Errorf("metrics %g %g %g", r.TTFTMs(), r.E2EMs(), r.TPOTMs())
	}
}
