package cost

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// sharedTestSteps are batches whose token counts fall in many routing
// bins: exact bins, binned decodes, prefills past the multinomial switch.
func sharedTestSteps() []BatchShape {
	var out []BatchShape
	for _, n := range []int{1, 3, 8, 17, 40, 64, 65, 100, 250, 256} {
		ctx := make([]int, n)
		for i := range ctx {
			ctx[i] = 500 + 37*i
		}
		out = append(out, decodeShape(ctx...))
	}
	for _, chunk := range []int{96, 700, 2048, 5000, 8192} {
		out = append(out, prefillShape(chunk, 300))
	}
	return out
}

// price runs steps through cm in order (twice, so later steps reuse tables)
// and returns every step's cost.
func priceSteps(cm *OpCostModel, steps []BatchShape, lockstepDP int) []StepCost {
	var out []StepCost
	for range 2 {
		for i := range steps {
			if lockstepDP > 1 {
				b := make([]*BatchShape, lockstepDP)
				for r := range b {
					b[r] = &steps[(i+r)%len(steps)]
				}
				c := make([]StepCost, lockstepDP)
				cm.LockstepCost(b, c)
				out = append(out, c...)
				continue
			}
			var c StepCost
			cm.StageCost(&steps[i], 0, &c)
			out = append(out, c)
		}
	}
	return out
}

// INV-16: a routing table is a function of its seed, router, token bin
// and how a layer is priced, not of the tables drawn before it nor of the
// run that drew it. A run that takes its tables from a RoutingTables
// filled by another run, which priced other steps in another order, prices
// every step exactly as a run drawing its own tables; it draws none
// itself; its report counts the same tables. Skewed routing (the
// permutation restarts per table), uniform, data-parallel lockstep with an
// all-to-all backend, and replay with a router per layer; routings that
// differ (seed, skew, layout) share nothing, and a run whose routed ops
// have predictors shares nothing (their extrapolation counters count
// calls).
func TestRoutingTablesShared(t *testing.T) {
	m, d := lookup(t, "qwen3-30b-a3b", "h100")
	heavy := &ExpertHistogram{Tokens: map[int][]float64{}}
	for layer := 0; layer < m.NumLayers; layer++ {
		w := make([]float64, m.NumExperts)
		for e := range w {
			w[e] = math.Pow(float64((e*7+layer)%m.NumExperts+1), -1.2)
		}
		heavy.Tokens[layer] = w
	}
	skewed := runresult.MoEConfig{Routing: runresult.RoutingSkewed, Seed: 3}
	for _, tc := range []struct {
		name   string
		l      spec.Layout
		moe    runresult.MoEConfig
		hist   *ExpertHistogram
		exec   string
		shared bool
	}{
		{"skewed TP8 EP8 eager", spec.Layout{TP: 8, EP: 8}, skewed, nil, runresult.ExecEager, true},
		{"skewed TP2 EP2 cuda-graph", spec.Layout{TP: 2, EP: 2}, skewed, nil, runresult.ExecCUDAGraph, true},
		{"uniform TP4 EP4", spec.Layout{TP: 4, EP: 4}, runresult.MoEConfig{Routing: runresult.RoutingUniform, Seed: 9}, nil, runresult.ExecEager, true},
		{"skewed DP8 EP8 lockstep DeepEP LL", spec.Layout{TP: 1, EP: 8, DP: 8},
			runresult.MoEConfig{Routing: runresult.RoutingSkewed, Skew: 1, All2AllBackend: spec.All2AllDeepEPLL}, nil, runresult.ExecEager, true},
		{"replay, a router per layer", spec.Layout{TP: 8, EP: 8}, runresult.MoEConfig{Routing: runresult.RoutingReplay, Histogram: "heavy.csv"}, heavy, runresult.ExecEager, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newModel := func(store *RoutingTables) *OpCostModel {
				cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: tc.l, Device: d, Limits: testLimits, MoE: tc.moe,
					Histogram: tc.hist, ExecutionMode: tc.exec, RoutingTables: store})
				if err != nil {
					t.Fatal(err)
				}
				return cm
			}
			dp := tc.l.DP
			steps := sharedTestSteps()
			if tc.hist != nil {
				steps = append(steps[:5], steps[len(steps)-2:]...) // 48 routers: fewer bins
			}
			own := newModel(nil)
			want := priceSteps(own, steps, dp)

			store := NewRoutingTables(0)
			// Another run fills the store: other steps first, in reverse.
			var other []BatchShape
			for i := len(steps) - 1; i >= 0; i-- {
				other = append(other, steps[i])
				if steps[i].Tokens > 2 {
					other = append(other, decodeShape(make([]int, steps[i].Tokens/2)...))
				}
			}
			fill := newModel(store)
			priceSteps(fill, other, dp)
			if dp > 1 {
				// Lockstep groups sum their ranks' tokens: the same groups.
				priceSteps(fill, steps, dp)
			}
			held := store.Len()
			if held == 0 {
				t.Fatalf("INV-16: the filling run left no tables in the store")
			}
			cm := newModel(store)
			got := priceSteps(cm, steps, dp)
			if store.Len() != held {
				t.Errorf("INV-16: the second run drew %d tables of its own; the first had drawn every bin it needed (is its sharing key the same? sharingKey)", store.Len()-held)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("INV-16: step %d priced %+v with shared tables, %+v with its own", i, got[i], want[i])
				}
			}
			if a, b := cm.routingTables(), own.routingTables(); a != b || a == 0 {
				t.Errorf("INV-16: the report counts %d tables with sharing, %d without", a, b)
			}
		})
	}

	// Routings that differ share nothing.
	store := NewRoutingTables(0)
	steps := sharedTestSteps()[:4]
	priceOne := func(l spec.Layout, moe runresult.MoEConfig, preds PredictorSet) int {
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, MoE: moe, Predictors: preds,
			ExecutionMode: runresult.ExecEager, RoutingTables: store})
		if err != nil {
			t.Fatal(err)
		}
		before := store.Len()
		priceSteps(cm, steps, 1)
		return store.Len() - before
	}
	base := priceOne(spec.Layout{TP: 8, EP: 8}, skewed, nil)
	for _, tc := range []struct {
		name string
		l    spec.Layout
		moe  runresult.MoEConfig
	}{
		{"another seed", spec.Layout{TP: 8, EP: 8}, runresult.MoEConfig{Routing: runresult.RoutingSkewed, Seed: 4}},
		{"another skew", spec.Layout{TP: 8, EP: 8}, runresult.MoEConfig{Routing: runresult.RoutingSkewed, Skew: 0.5, Seed: 3}},
		{"another layout", spec.Layout{TP: 4, EP: 4}, skewed},
	} {
		if n := priceOne(tc.l, tc.moe, nil); n != base {
			t.Errorf("INV-16: %s added %d tables to the store, want its own %d", tc.name, n, base)
		}
	}
	if n := priceOne(spec.Layout{TP: 8, EP: 8}, skewed, nil); n != 0 {
		t.Errorf("INV-16: the same routing again added %d tables, want 0", n)
	}
	gemm := spec.OpKey{Op: spec.OpMoEGroupedGEMM, Measurement: spec.KernelOnly, TP: 8, EP: 8}
	if n := priceOne(spec.Layout{TP: 8, EP: 8}, skewed, predSet{gemm: linearPred{0.01, 0.001, 0.002}}); n != 0 {
		t.Errorf("a bundle-priced grouped GEMM shared %d tables, want none", n)
	}
}

// The store holds at most its bound, forgetting the oldest routing.
func TestRoutingTablesBounded(t *testing.T) {
	s := NewRoutingTables(10)
	for b := range 6 {
		s.put("a", 0, b, &routeTable{})
	}
	for b := range 6 {
		s.put("b", 0, b, &routeTable{})
	}
	if s.Len() != 6 || s.get("a", 0, 0) != nil || s.get("b", 0, 5) == nil {
		t.Errorf("after 6 + 6 tables with room for 10: %d held, a kept %v, b kept %v; want b's 6 alone", s.Len(), s.get("a", 0, 0) != nil, s.get("b", 0, 5) != nil)
	}
	s.put("b", 0, 5, &routeTable{})
	if s.Len() != 6 {
		t.Errorf("a table stored twice counted twice: %d", s.Len())
	}
}

// drawStats is the slowest EP rank's load over its even share, draw by
// draw, and each expert's mean count.
type drawStats struct {
	n           int
	sum, sumSq  float64
	expertMean  []float64
	expertSumSq []float64
}

func (s *drawStats) add(counts []int32, ep int, even float64) {
	local := len(counts) / ep
	most := 0.0
	for r := 0; r < ep; r++ {
		var load float64
		for _, c := range counts[r*local : (r+1)*local] {
			load += float64(c)
		}
		most = max(most, load/even)
	}
	s.n++
	s.sum += most
	s.sumSq += most * most
	if s.expertMean == nil {
		s.expertMean, s.expertSumSq = make([]float64, len(counts)), make([]float64, len(counts))
	}
	for e, c := range counts {
		s.expertMean[e] += float64(c)
		s.expertSumSq[e] += float64(c) * float64(c)
	}
}

func (s *drawStats) meanVar() (mean, variance float64) {
	n := float64(s.n)
	mean = s.sum / n
	return mean, (s.sumSq/n - mean*mean) * n / (n - 1)
}

// uniformity is the chi-square statistic of the experts' mean counts
// against their common mean (each expert's mean over draws from its own
// spread): about len(experts)-1 when every expert is equally likely to be
// hot.
func (s *drawStats) uniformity() float64 {
	n := float64(s.n)
	var total float64
	for _, v := range s.expertMean {
		total += v / n
	}
	mu := total / float64(len(s.expertMean))
	var chi float64
	for e, v := range s.expertMean {
		m := v / n
		varE := (s.expertSumSq[e]/n - m*m) / (n - 1)
		chi += (m - mu) * (m - mu) / varE
	}
	return chi
}

// drawTables draws tables x routeSamples routing draws of tokens tokens as
// routing tables are drawn (one stream per table), restarting the
// permutation at each table or, as routing tables were drawn before they
// could be shared, carrying it from table to table.
func drawTables(t *testing.T, weights []float64, permute bool, seed uint64, tables, tokens int, restart bool) *drawStats {
	const experts, topK, ep = 128, 8, 8
	r, err := newRouter(experts, topK, weights, permute)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int32, experts)
	s := &drawStats{}
	for k := range tables {
		rng := newDrawRNG(seed, uint64(k))
		if restart {
			r.restart()
		}
		for range routeSamples {
			r.draw(rng, tokens, counts)
			s.add(counts, ep, float64(tokens*topK)/ep)
		}
	}
	return s
}

// Restarting the permutation at every table keeps the routing's
// distribution: over 25,600 draws of skewed routing (Zipf 0.2, the
// default, and 1.0), 128 experts, top-8, EP8, at 16 tokens (drawn token by
// token) and 200 (multinomial), the slowest rank's load has the mean and
// variance of the generator that carried the permutation from table to
// table, within sampling error (4 standard errors, independent seeds), and
// every expert is as likely to be hot (chi-square of the experts' mean
// counts within 6 of its standard deviations of 127; a router that never
// permutes, the check's control, is far outside).
func TestRestartKeepsRoutingDistribution(t *testing.T) {
	const tables = 400
	for _, skew := range []float64{0.2, 1} {
		w := zipfWeights(128, skew)
		for _, tokens := range []int{16, 200} {
			carried := drawTables(t, w, true, 11, tables, tokens, false)
			restarted := drawTables(t, w, true, 12, tables, tokens, true)
			m0, v0 := carried.meanVar()
			m1, v1 := restarted.meanVar()
			n := float64(carried.n)
			if z := (m1 - m0) / math.Sqrt(v0/n+v1/n); math.Abs(z) > 4 {
				t.Errorf("skew %g, %d tokens: slowest rank's mean load %.5f restarted, %.5f carried: z = %.1f", skew, tokens, m1, m0, z)
			}
			// The variance's standard error, sqrt(2/(n-1)) of it for a
			// near-normal statistic; the slowest rank's is skewed, so 5.
			if z := (v1 - v0) / (v0 * math.Sqrt(4/(n-1))); math.Abs(z) > 5 {
				t.Errorf("skew %g, %d tokens: slowest rank's load variance %.6f restarted, %.6f carried: z = %.1f", skew, tokens, v1, v0, z)
			}
			bound := 127 + 6*math.Sqrt(2*127)
			if chi := restarted.uniformity(); chi > bound {
				t.Errorf("skew %g, %d tokens: experts' mean counts chi-square %.0f restarted, want under %.0f (every expert as likely to be hot)", skew, tokens, chi, bound)
			}
			if chi := carried.uniformity(); chi > bound {
				t.Errorf("skew %g, %d tokens: experts' mean counts chi-square %.0f carried, want under %.0f", skew, tokens, chi, bound)
			}
			t.Logf("skew %g, %d tokens: slowest rank / even share %.4f +- %.4f restarted, %.4f +- %.4f carried", skew, tokens, m1, math.Sqrt(v1), m0, math.Sqrt(v0))
			if skew == 1 && tokens == 200 {
				fixed := drawTables(t, w, false, 12, 50, tokens, true)
				if chi := fixed.uniformity(); chi < 10*bound {
					t.Errorf("control: a router that never permutes scores chi-square %.0f, want far above %.0f (the check cannot see a hot expert)", chi, bound)
				}
			}
		}
	}
}

// The memo of an EP rank's roofline grouped GEMM returns what pricing it
// returns, on a miss, a hit and after another key took the slot; a table
// built through it equals one priced without it.
func TestRankGEMMMemoExact(t *testing.T) {
	cm := qwenEP8(t, runresult.MoEConfig{Routing: runresult.RoutingSkewed}, nil)
	rm := cm.routing
	direct := func(routed, most, active int) float64 {
		x := []float64{float64(routed), float64(most), float64(active)}
		ms, _ := cm.price(&rm.ops[rm.gemm], x)
		return ms
	}
	for i := range 5000 {
		routed := 1 + (i*7919)%3000
		most := 1 + (i*104729)%routed
		active := 1 + (i*31)%16
		for range 2 {
			if got, want := rm.rankGEMMMs(routed, most, active), direct(routed, most, active); got != want {
				t.Fatalf("(%d, %d, %d): memo %v, priced %v", routed, most, active, got, want)
			}
		}
	}
	// Keys that share a slot, in turn: routed counts whose slots agree.
	slot := func(routed, most, active int) uint64 {
		return (uint64(routed)*0x9e3779b1 ^ uint64(most)<<4 ^ uint64(active)) & (gemmMemoSlots - 1)
	}
	pairs := 0
	for r2 := 101; r2 < 5000 && pairs < 20; r2++ {
		if slot(r2, 12, 9) != slot(100, 12, 9) || direct(r2, 12, 9) == direct(100, 12, 9) {
			continue
		}
		pairs++
		for _, r := range []int{100, r2, 100} {
			if got, want := rm.rankGEMMMs(r, 12, 9), direct(r, 12, 9); got != want {
				t.Fatalf("(%d, 12, 9) after a key of the same slot: memo %v, priced %v", r, got, want)
			}
		}
	}
	if pairs == 0 {
		t.Fatal("no routed counts share a memo slot: the collision check checks nothing")
	}
	for _, tokens := range []int{5, 64, 300, 2000} {
		b := int(rm.binOf[tokens])
		withMemo := *rm.build(0, b)
		rm.gemmMemo, rm.ops[rm.gemm].pred = nil, rooflinePred{cm, rm.gemm}
		without := *rm.build(0, b)
		rm.ops[rm.gemm].pred = nil
		if withMemo != without {
			t.Errorf("%d tokens: a table priced through the memo differs from one priced op by op", tokens)
		}
	}
}

// rooflinePred prices routed op i of cm's routing with the roofline, as a
// table predictor (layerCost gives it all three features and does not
// memoise it).
type rooflinePred struct {
	cm *OpCostModel
	i  int
}

func (p rooflinePred) lookup(x []float64) (float64, kerneldb.Fit) {
	return p.PredictMs(x), kerneldb.Fit(0)
}
func (p rooflinePred) table() string { return "roofline" }

func (p rooflinePred) PredictMs(x []float64) float64 {
	rm := p.cm.routing
	return p.cm.roof.TimeMs(&rm.ops[p.i].op, x, p.cm.measurement) * p.cm.scale[rm.ops[p.i].comp]
}
