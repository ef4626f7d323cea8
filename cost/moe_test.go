package cost

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// linearPred answers a + b x[0] + c x[1].
type linearPred struct{ a, b, c float64 }

func (p linearPred) PredictMs(x []float64) float64 {
	ms := p.a + p.b*x[0]
	if len(x) > 1 {
		ms += p.c * x[1]
	}
	return ms
}

// predSet is a PredictorSet of any predictors.
type predSet map[spec.OpKey]OpPredictor

func (s predSet) Predictor(k spec.OpKey) (OpPredictor, bool) {
	p, ok := s[k]
	return p, ok
}

func (s predSet) Keys() []spec.OpKey {
	var out []spec.OpKey
	for k := range s {
		out = append(out, k)
	}
	return out
}

// qwenEP8 is qwen3-30b-a3b (128 experts, top-8) at TP8/EP8: 16 experts a
// rank, eager (no CUDA graph padding).
func qwenEP8(t *testing.T, moe runresult.MoEConfig, preds PredictorSet) *OpCostModel {
	return qwenLayout(t, spec.Layout{TP: 8, EP: 8}, moe, preds)
}

// qwenLayout is qwen3-30b-a3b on layout l, eager.
func qwenLayout(t *testing.T, l spec.Layout, moe runresult.MoEConfig, preds PredictorSet) *OpCostModel {
	t.Helper()
	m, d := lookup(t, "qwen3-30b-a3b", "h100")
	cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, MoE: moe, Predictors: preds, ExecutionMode: runresult.ExecEager})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// Hand-worked: the grouped GEMM predictor costs 0.01 ms per routed token
// plus 0.05 ms per token of the rank's busiest expert. Rank 0 gets 12
// tokens, all on one expert (0.12 + 0.60 = 0.72 ms); rank 1 gets 40 tokens
// over 10 experts (0.40 + 0.20 = 0.60 ms); rank 2 gets 48 tokens over its
// 16 experts (0.48 + 0.15 = 0.63 ms); ranks 3-7 one token (0.06 ms). The
// layer waits for rank 0, the slowest though not the most loaded: 0.72 ms,
// not the mean (0.2425 ms). At DP=1 vLLM exchanges nothing (the TP
// all-reduce sums the experts); on DP8 x EP8 an all-to-all backend's
// dispatch and combine (1 ms per GB here) move what the most loaded rank
// receives, rank 2's 48 copies of 2048 BF16 values, 48 x 4096 bytes each,
// and the gathering backends do not depend on the routing.
func TestSlowestEPRankSetsLayerTime(t *testing.T) {
	m, _ := lookup(t, "qwen3-30b-a3b", "h100")
	l := spec.Layout{TP: 8, EP: 8}.Normalize()
	set := predSet{}
	for k, p := range domainSet(m, l, testLimits, spec.KernelOnly, 0.001) {
		set[k] = p
	}
	gemm := spec.OpKey{Op: spec.OpMoEGroupedGEMM, Measurement: spec.KernelOnly, TP: 8, EP: 8, LocalExperts: 16}
	if _, ok := set[gemm]; !ok {
		t.Fatalf("no %s in the query domain", gemm)
	}
	set[gemm] = linearPred{b: 0.01, c: 0.05}
	dp8 := spec.Layout{TP: 1, EP: 8, DP: 8}.Normalize()
	for k, p := range domainSet(m, dp8, testLimits, spec.KernelOnly, 0.001) {
		set[k] = p
	}
	set[spec.OpKey{Op: spec.OpMoEGroupedGEMM, Measurement: spec.KernelOnly, TP: 1, EP: 8, LocalExperts: 16}] = linearPred{b: 0.01, c: 0.05}
	for _, op := range []string{spec.OpEPDispatch, spec.OpEPCombine} {
		set[spec.OpKey{Op: op, Measurement: spec.KernelOnly, TP: 1, Workers: 8}] = linearPred{b: 1e-9}
	}
	counts := make([]int, 128)
	counts[0] = 12
	for e := 16; e < 26; e++ {
		counts[e] = 4
	}
	for e := 32; e < 48; e++ {
		counts[e] = 3
	}
	for r := 3; r < 8; r++ {
		counts[16*r] = 1
	}
	tokens := 12 + 40 + 48 + 5 // every copy of the draw
	gathered := func(op string) float64 {
		x := spec.EPExchange{Backend: spec.All2AllAllgatherRS, GroupTokens: tokens / 8, Hidden: 2048, Experts: 128}
		if op == spec.OpEPCombine {
			return x.CombineBytes() * 1e-9
		}
		return x.DispatchBytes() * 1e-9
	}
	for _, tc := range []struct {
		backend string
		layout  spec.Layout
		wantEP  float64
	}{
		{spec.All2AllPPLX, spec.Layout{TP: 8, EP: 8}, 0}, // DP=1: no exchange
		{spec.All2AllAllgatherRS, dp8, gathered(spec.OpEPDispatch) + gathered(spec.OpEPCombine)},
		{spec.All2AllPPLX, dp8, 2 * 48 * 2048 * 2 * 1e-9},
	} {
		cm := qwenLayout(t, tc.layout, runresult.MoEConfig{All2AllBackend: tc.backend}, set)
		moe, ep, err := cm.LayerRoutedCost(counts)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(moe-0.72) > 1e-12 || math.Abs(ep-tc.wantEP) > 1e-12 {
			t.Errorf("%s %s: layer grouped GEMM %g ms (want rank 0's 0.72), EP %g ms (want %g)", tc.backend, tc.layout, moe, ep, tc.wantEP)
		}
	}
	// Moving rank 0's 12 tokens onto 12 experts makes rank 2 the slowest.
	counts[0] = 0
	for e := 0; e < 12; e++ {
		counts[e] = 1
	}
	if moe, _, _ := qwenEP8(t, runresult.MoEConfig{}, set).LayerRoutedCost(counts); math.Abs(moe-0.63) > 1e-12 {
		t.Errorf("grouped GEMM %g ms, want rank 2's 0.63", moe)
	}
}

// Routing draws price every MoE layer at its slowest rank, which streams
// the weights of the experts that got tokens. With 512 decoding sequences
// every local expert has tokens and the slowest rank's load decides: even
// <= uniform < skewed < more skewed (even and uniform can tie: each rank's
// ~32 tokens per expert fill one 64-row tile of the fused-MoE kernel either
// way, roofline/moegemm.go). With 32 sequences at EP=1 (256 copies
// over 128 experts) concentrated routing touches fewer experts: the order
// reverses.
func TestSkewRaisesSlowestRank(t *testing.T) {
	m, d := lookup(t, "qwen3-30b-a3b", "h100")
	moeMs := func(seqs int, l spec.Layout, moe runresult.MoEConfig) float64 {
		b := decodeShape(make([]int, seqs)...)
		for i := range b.DecodeContexts {
			b.DecodeContexts[i] = 1000
		}
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, MoE: moe})
		if err != nil {
			t.Fatal(err)
		}
		var c StepCost
		var sum float64
		const steps = 200
		for range steps {
			cm.StageCost(&b, 0, &c)
			sum += c.Ms[CompMoE]
		}
		return sum / steps
	}
	routings := []runresult.MoEConfig{{Routing: runresult.RoutingEven}, {Routing: runresult.RoutingUniform}, {Routing: runresult.RoutingSkewed}, {Routing: runresult.RoutingSkewed, Skew: 2}}
	for _, tc := range []struct {
		seqs       int
		layout     spec.Layout
		increasing bool
	}{
		{512, spec.Layout{TP: 8, EP: 8}, true},
		{32, spec.Layout{TP: 8, EP: 1}, false},
	} {
		ms := make([]float64, len(routings))
		for i, r := range routings {
			ms[i] = moeMs(tc.seqs, tc.layout, r)
		}
		t.Logf("%d-sequence decode, TP%d EP%d, MoE ms per step: even %.3f, uniform %.3f, skewed s=1 %.3f, s=2 %.3f",
			tc.seqs, tc.layout.TP, tc.layout.EP, ms[0], ms[1], ms[2], ms[3])
		for i := 1; i < len(ms); i++ {
			if tc.increasing && i == 1 && math.Abs(ms[1]-ms[0]) < 1e-9 {
				continue // even and uniform in the same tiles
			}
			if (ms[i] > ms[i-1]) != tc.increasing {
				t.Errorf("%d sequences, EP%d: MoE ms %v: want increasing %v with skew", tc.seqs, tc.layout.EP, ms, tc.increasing)
				break
			}
		}
	}
}

// The uniform router's draws: every token picks top-k distinct experts;
// counts add up; the multinomial used for large batches agrees with the
// token-by-token draw on the slowest rank's load to within 1% at the
// switch (64 tokens, top-8).
func TestRouterMultinomialMatchesExact(t *testing.T) {
	const experts, topK, ep = 128, 8, 8
	r, err := newRouter(experts, topK, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	rng := newDrawRNG(1, 2)
	counts := make([]int32, experts)
	r.draw(rng, 1, counts)
	ones := 0
	for _, c := range counts {
		if c > 1 {
			t.Fatalf("one token put %d copies on an expert", c)
		}
		ones += int(c)
	}
	if ones != topK {
		t.Fatalf("one token reached %d experts, want %d", ones, topK)
	}
	maxRank := func(counts []int32) float64 {
		best := int32(0)
		for k := 0; k < ep; k++ {
			var s int32
			for _, c := range counts[k*16 : (k+1)*16] {
				s += c
			}
			best = max(best, s)
		}
		return float64(best)
	}
	const tokens, draws = 64, 20000
	var exact, multi float64
	for range draws {
		r.drawExact(rng, tokens, counts)
		exact += maxRank(counts)
		clear(counts)
		r.drawMultinomial(rng, tokens, counts)
		var total int32
		for _, c := range counts {
			total += c
		}
		if total != tokens*topK {
			t.Fatalf("multinomial routed %d copies, want %d", total, tokens*topK)
		}
		multi += maxRank(counts)
		clear(counts)
	}
	exact, multi = exact/draws, multi/draws
	even := float64(tokens * topK / ep)
	t.Logf("64 tokens: slowest of 8 ranks routes %.2f copies (token by token), %.2f (multinomial); even share %.0f", exact, multi, even)
	if math.Abs(multi-exact)/exact > 0.01 || !(exact > even*1.1) {
		t.Errorf("slowest rank %g (exact) vs %g (multinomial), even %g", exact, multi, even)
	}
}

// The inclusion probabilities of successive sampling (Rosen's
// approximation) match a Monte Carlo count of the skewed router to 3%.
func TestSuccessiveInclusion(t *testing.T) {
	const experts, topK, tokens = 128, 8, 200000
	w := zipfWeights(experts, 1)
	r, err := newRouter(experts, topK, w, false)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int32, experts)
	r.drawExact(newDrawRNG(3, 4), tokens, counts)
	var sum float64
	for i, p := range r.incl {
		sum += p
		if mc := float64(counts[i]) / tokens; math.Abs(mc-p) > 0.03*p+0.002 {
			t.Errorf("expert %d: inclusion %g approximated, %g counted", i, p, mc)
		}
	}
	if math.Abs(sum-topK) > 1e-6 {
		t.Errorf("inclusion probabilities add up to %g, want %d", sum, topK)
	}
}

// A replayed histogram whose every token went to rank 0's experts puts
// the whole batch on rank 0: the layer costs what rank 0 routing all T x k
// copies costs. Bad histograms are refused with file, line and column.
func TestReplayHistogram(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("layer,expert,tokens\n")
	for e := 0; e < 16; e++ {
		b.WriteString("0," + strconv.Itoa(e) + ",100\n")
	}
	path := filepath.Join(dir, "hist.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	m, d := lookup(t, "qwen3-30b-a3b", "h100")
	h, err := ReadExpertHistogram(path, m.NumExperts)
	if err != nil {
		t.Fatal(err)
	}
	l := spec.Layout{TP: 8, EP: 8}
	cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits,
		MoE: runresult.MoEConfig{Routing: runresult.RoutingReplay, Histogram: path}, Histogram: h, ExecutionMode: runresult.ExecEager})
	if err != nil {
		t.Fatal(err)
	}
	// Ten tokens send 80 copies, all to rank 0; evenly, each rank gets 10.
	counts, evenCounts := make([]int, 128), make([]int, 128)
	for e := range counts[:16] {
		counts[e] = 5
	}
	for r := 0; r < 8; r++ {
		for e := 0; e < 10; e++ {
			evenCounts[16*r+e] = 1
		}
	}
	want, _, _ := cm.LayerRoutedCost(counts)
	evenLayer, _, _ := cm.LayerRoutedCost(evenCounts)
	b10 := decodeShape(1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	var c, ce StepCost
	cm.StageCost(&b10, 0, &c)
	qwenEP8(t, runresult.MoEConfig{Routing: runresult.RoutingEven}, nil).StageCost(&b10, 0, &ce)
	// Ratios are stored as float32: agreement to 1e-6.
	if got, want := c.Ms[CompMoE]-ce.Ms[CompMoE], 48*(want-evenLayer); math.Abs(got-want) > 1e-6*want || !(want > 0) {
		t.Errorf("replayed step's grouped GEMMs exceed the even load by %g ms, want 48 x (rank 0 with all 80 copies - even) = %g ms", got, want)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"no tokens column", "layer,expert\n0,1\n", `missing column "tokens"`},
		{"expert out of range", "layer,expert,tokens\n0,128,5\n", "line 2 column expert"},
		{"negative tokens", "layer,expert,tokens\n0,1,5\n0,2,-1\n", "line 3 column tokens"},
		{"duplicate", "layer,expert,tokens\n0,1,5\n0,1,6\n", "line 3: layer 0 expert 1 listed twice"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".csv")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := ReadExpertHistogram(p, 128); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// The gating predictors are asked in the prefill_hot context; a bundle with
// only standalone_legacy gating rows is not used for them (roofline, and
// the summary says why); MoE keys match a predictor of any routing path,
// preferring standard_fused_topk, and shuffling (which spec's query domain
// keys without local experts) matches the bundle's ep=8 experts=16 key, as
// profiles record it; the matches are reported.
func TestGatingContextAndRoutingPath(t *testing.T) {
	m, _ := lookup(t, "qwen3-30b-a3b", "h100")
	l := spec.Layout{TP: 8, EP: 8}.Normalize()
	set := predSet{}
	for k, p := range domainSet(m, l, testLimits, spec.KernelOnly, 0.002) {
		set[k] = p
	}
	for k, p := range set {
		if spec.OpFamily(k.Op) != spec.FamilyMoE {
			continue
		}
		delete(set, k)
		if k.GatingContext == spec.GatingPrefillHot {
			k.GatingContext = spec.GatingStandalone
		}
		k.RoutingPath = "uniform_topk"
		if k.Op == spec.OpMoEShuffling {
			k.LocalExperts = 16
		}
		set[k] = p
	}
	cm := qwenEP8(t, runresult.MoEConfig{}, set)
	var c StepCost
	b := decodeShape(100, 200)
	cm.StageCost(&b, 0, &c)
	r := cm.Report()
	if len(r.GatingContexts) != 2 {
		t.Fatalf("gating contexts %+v", r.GatingContexts)
	}
	for _, g := range r.GatingContexts {
		if g.Context != spec.GatingPrefillHot || g.Source != "roofline" || !strings.Contains(g.Note, spec.GatingStandalone) {
			t.Errorf("gating %+v: want prefill_hot from the roofline, standalone_legacy named and not used", g)
		}
	}
	matched := map[string]bool{}
	for _, k := range r.MatchedKeys {
		matched[strings.SplitN(k.Asked, "[", 2)[0]] = strings.Contains(k.Used, "routing=uniform_topk")
	}
	// Only the two gating ops fall back to the roofline.
	if !matched[spec.OpMoEShuffling] || !matched[spec.OpMoEGroupedGEMM] || len(r.RooflineFallbacks) != 2 {
		t.Errorf("matched keys %+v, fallbacks %+v: want shuffling and grouped GEMM on uniform_topk", r.MatchedKeys, r.RooflineFallbacks)
	}
	// With standard_fused_topk present too, it is preferred; prefill_hot
	// gating is used.
	for k, p := range set {
		if spec.OpFamily(k.Op) != spec.FamilyMoE {
			continue
		}
		k.RoutingPath = routingStandardPath
		if k.GatingContext == spec.GatingStandalone {
			k.GatingContext = spec.GatingPrefillHot
		}
		set[k] = p
	}
	r = qwenEP8(t, runresult.MoEConfig{}, set).Report()
	for _, g := range r.GatingContexts {
		if !strings.Contains(g.Source, "ctx=prefill_hot") || !strings.Contains(g.Source, routingStandardPath) {
			t.Errorf("gating %+v: want the prefill_hot standard_fused_topk predictor", g)
		}
	}
	for _, k := range r.MatchedKeys {
		if !strings.Contains(k.Used, routingStandardPath) {
			t.Errorf("matched %+v: want standard_fused_topk preferred", k)
		}
	}
}

// The default skew's anchor (defaultRoutingSkew): successive sampling of
// top-8 of 128 experts at Zipf exponent s, the experts placed at random on
// 16 ranks, gives a long-run median max/mean rank load near 1.07 at
// s = 0.10 (vLLM PR #50647's EPLB-off figure, 1.069) and near 1.15 at the
// default 0.2.
func TestDefaultSkewAnchor(t *testing.T) {
	medianMaxMean := func(s float64) float64 {
		incl := successiveInclusion(zipfWeights(128, s), 8)
		rng := newDrawRNG(5, 6)
		perm := make([]int, 128)
		var ratios []float64
		for range 401 {
			for i := range perm {
				perm[i] = i
			}
			for i := len(perm) - 1; i > 0; i-- {
				j, _ := rng.below(i + 1)
				perm[i], perm[j] = perm[j], perm[i]
			}
			var loads [16]float64
			for i, e := range perm {
				loads[i/8] += incl[e]
			}
			top := 0.0
			for _, x := range loads {
				top = math.Max(top, x)
			}
			ratios = append(ratios, top/(8.0/16))
		}
		return spec.Percentile(ratios, 50)
	}
	for _, c := range []struct{ s, want float64 }{{0.10, 1.069}, {runresult.DefaultRoutingSkew, 1.15}} {
		if got := medianMaxMean(c.s); math.Abs(got-c.want) > 0.02 {
			t.Errorf("Zipf %.2f: median max/mean rank load %.3f, want %.3f", c.s, got, c.want)
		}
	}
}
