package simulate

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// A full MoE run with skewed routing and an all-to-all backend keeps every
// engine invariant, and the summary lists routing, backend and the tables
// built.
func TestMoERunInvariants(t *testing.T) {
	cfg := testConfig()
	cfg.Model, cfg.Layout = "qwen3-30b-a3b", spec.Layout{TP: 1, EP: 8, DP: 8}
	cfg.MoE = runresult.MoEConfig{Routing: runresult.RoutingSkewed, All2AllBackend: spec.All2AllDeepEPLL, Seed: 3}
	cfg.Engine.MaxNumSeqs = 32
	cfg.Engine.MaxModelLen = 4096
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 6, NumRequests: 600, Seed: 2}
	sum := runChecked(t, cfg).sum
	checkBreakdown(t, sum)
	mo := sum.CostModel.MoE
	if mo == nil || mo.Routing != runresult.RoutingSkewed || mo.Skew != 0.2 || mo.All2AllBackend != spec.All2AllDeepEPLL || mo.RoutingTables == 0 || mo.Method == "" {
		t.Errorf("MoE report %+v", mo)
	}
	if sum.Config.MoE.All2AllBackend != spec.All2AllDeepEPLL || sum.Config.MoE.Routing != runresult.RoutingSkewed {
		t.Errorf("config MoE %+v", sum.Config.MoE)
	}
}

// checkBreakdown checks that each breakdown's rows add up to its wall time
// and its shares to one, with every device component at its modelled time.
func checkBreakdown(t *testing.T, sum *runresult.Summary) {
	t.Helper()
	for _, b := range sum.Breakdown {
		var ms, share float64
		for _, r := range b.Rows {
			ms += r.WallMs
			share += r.Share
			if r.WallMs > r.ModelledMeanMs*float64(b.StageSteps)*(1+1e-9) {
				t.Errorf("%s %s: %g ms of wall time, more than modelled", b.Role, r.Component, r.WallMs)
			}
		}
		if math.Abs(ms-b.WallMs) > 1e-6*b.WallMs || math.Abs(share-1) > 1e-9 || b.StageSteps == 0 {
			t.Errorf("%s breakdown: rows add up to %g ms of %g, shares to %g", b.Role, ms, b.WallMs, share)
		}
	}
}

// EP=1 and EP=8 of the same load at TP8, DP1: every step takes what each
// layout's cost model prices for it. At EP1 each GPU holds every expert,
// 1/8 wide; at EP8 each holds 16 whole experts and the layer waits for the
// slowest rank. Either way every rank holds every token and the TP
// all-reduce sums the experts' outputs: vLLM exchanges no tokens at DP=1
// (use_all2all_kernels is dp_size > 1 and use_ep), so both layouts pay the
// same two all-reduces a layer and no EP communication.
func TestEP1AndEP8DifferAsCostModel(t *testing.T) {
	load := reqs([3]float64{0, 2048, 6}, [3]float64{5, 300, 12}, [3]float64{10, 4000, 4})
	base := testConfig()
	base.Model = "qwen3-30b-a3b"
	base.Engine.MaxModelLen = 8192
	for _, routing := range []string{runresult.RoutingEven, runresult.RoutingUniform} {
		ep1, ep8 := base, base
		ep1.Layout, ep8.Layout = spec.Layout{TP: 8, EP: 1}, spec.Layout{TP: 8, EP: 8}
		ep1.MoE.Routing, ep8.MoE.Routing = routing, routing
		_, _, log1, _ := simulate(t, ep1, load)
		_, _, log8, _ := simulate(t, ep8, load)
		if len(log1.steps) != len(log8.steps) {
			t.Fatalf("INV-8: %s: %d steps at EP1, %d at EP8: spaced arrivals should give the same batches", routing, len(log1.steps), len(log8.steps))
		}
		for i := range log1.steps {
			s1, s8 := log1.steps[i], log8.steps[i]
			c1, c8 := s1.Stages[0].Cost, s8.Stages[0].Cost
			if s1.Tokens != s8.Tokens || s1.DecodeSeqs != s8.DecodeSeqs {
				t.Fatalf("INV-8: %s step %d differs in batch", routing, i)
			}
			if !near(s1.EndS-s1.StartS, c1.TotalMs()/1e3) || !near(s8.EndS-s8.StartS, c8.TotalMs()/1e3) {
				t.Fatalf("INV-8: %s step %d: durations %g and %g s, cost models %g and %g ms", routing, i, s1.EndS-s1.StartS, s8.EndS-s8.StartS, c1.TotalMs(), c8.TotalMs())
			}
			if c1.Ms[cost.CompEPComm] != 0 || c8.Ms[cost.CompEPComm] != 0 || c1.Ms[cost.CompTPComm] != c8.Ms[cost.CompTPComm] {
				t.Errorf("INV-8: %s step %d: EP comm %g / %g ms, TP all-reduce %g / %g ms at EP1 / EP8", routing, i, c1.Ms[cost.CompEPComm], c8.Ms[cost.CompEPComm], c1.Ms[cost.CompTPComm], c8.Ms[cost.CompTPComm])
			}
		}
		// The first step is the 2048-token prefill alone: with even routing
		// (no draw) it is exactly what a fresh cost model prices.
		if routing == runresult.RoutingEven {
			for _, c := range []struct {
				cfg runresult.Config
				log *stepLog
			}{{ep1, log1}, {ep8, log8}} {
				s := c.log.steps[0]
				if want := price(t, c.cfg, prefillShape(2048, 0)); !near(s.EndS-s.StartS, want) {
					t.Errorf("INV-8: %s: 2048-token prefill %g s, cost model %g s", c.cfg.Layout, s.EndS-s.StartS, want)
				}
			}
		}
		t.Logf("%s routing: first prefill (2048 tokens) EP1 %.3f ms (MoE %.3f), EP8 %.3f ms (MoE %.3f, EP comm %.3f)", routing,
			log1.steps[0].Stages[0].Cost.TotalMs(), log1.steps[0].Stages[0].Cost.Ms[cost.CompMoE],
			log8.steps[0].Stages[0].Cost.TotalMs(), log8.steps[0].Stages[0].Cost.Ms[cost.CompMoE], log8.steps[0].Stages[0].Cost.Ms[cost.CompEPComm])
	}
}

// A replayed histogram with fewer than top-k experts holding tokens cannot
// be a top-k routing: New refuses it.
func TestReplayHistogramFewerThanTopK(t *testing.T) {
	dir := t.TempDir()
	// Fewer than top-k experts with tokens cannot be a top-k routing.
	few := filepath.Join(dir, "few.csv")
	os.WriteFile(few, []byte("layer,expert,tokens\n3,0,5\n3,1,5\n"), 0o644)
	cfg := testConfig()
	cfg.Model, cfg.Layout = "qwen3-30b-a3b", spec.Layout{TP: 8, EP: 8}
	cfg.MoE = runresult.MoEConfig{Routing: runresult.RoutingReplay, Histogram: few}
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "fewer than top-k") {
		t.Errorf("a 2-expert histogram: %v", err)
	}
}

// INV-16, end to end: a skewed-routing MoE run (and a disaggregated one)
// that takes its routing tables from a store another run filled, at
// another rate, writes the same bytes as a run drawing its own tables.
func TestSharedRoutingTablesSameOutputs(t *testing.T) {
	colocated := testConfig()
	colocated.Model, colocated.Layout = "qwen3-30b-a3b", spec.Layout{TP: 2, EP: 2}
	colocated.Engine.MaxModelLen = 4096
	colocated.MoE = runresult.MoEConfig{Routing: runresult.RoutingSkewed, Seed: 5}
	colocated.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 8, NumRequests: 300, Seed: 2}
	disagg := colocated
	disagg.Mode = runresult.ModeDisaggregated
	disagg.Disaggregation = runresult.DisaggregationConfig{PrefillInstances: 1, DecodeInstances: 1}
	for name, cfg := range map[string]runresult.Config{"colocated": colocated, "disaggregated": disagg} {
		run := func(cfg runresult.Config, store *cost.RoutingTables) string {
			dir := t.TempDir()
			src, _, err := openSource(cfg.Workload)
			if err != nil {
				t.Fatal(err)
			}
			r, err := Resolve(cfg, Options{RoutingTables: store})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Execute(r, src, Outputs{Dir: dir}, Options{RoutingTables: store}); err != nil {
				t.Fatal(err)
			}
			return dir
		}
		own := run(cfg, nil)
		store := cost.NewRoutingTables(0)
		fill := cfg
		fill.Workload.RatePerS = 30
		run(fill, store)
		held := store.Len()
		shared := run(cfg, store)
		if held == 0 {
			t.Fatalf("%s: the filling run shared no tables", name)
		}
		for _, f := range []string{runresult.RequestsCSVFile, runresult.SummaryFile, runresult.ConfigFile} {
			a, err := os.ReadFile(filepath.Join(own, f))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(filepath.Join(shared, f))
			if !bytes.Equal(a, b) {
				t.Errorf("INV-16: %s: %s differs between a run drawing its own routing tables and one sharing them", name, f)
			}
		}
	}
}
