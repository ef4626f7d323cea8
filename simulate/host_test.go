package simulate

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// runDecode runs one request (500-token prompt, 12 output tokens) and
// returns its decode steps.
func runDecode(t *testing.T, cfg runresult.Config) []StepRecord {
	t.Helper()
	_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 500, 12}))
	return log.steps[1:]
}

// issueMsOf sums, independently of the cost model, the eager host issue
// time of one step on a one-stage layout: every op of every layer (the
// prefill or decode attention only when the batch has it), the embedding
// and the LM head, priced by spec's inventory and issue costs.
func issueMsOf(m *spec.Model, l spec.Layout, costs spec.IssueCosts, prefill, decode bool) float64 {
	var us float64
	for i := 0; i < m.NumLayers; i++ {
		for _, o := range spec.LayerOps(m, l, i) {
			if (o.Name == spec.OpAttnPrefill && !prefill) || (o.Name == spec.OpAttnDecode && !decode) {
				continue
			}
			us += costs.OpUs(roofline.IssueOf(m, l, &o))
		}
	}
	first, last, _ := spec.ModelOps(m, l)
	for _, o := range append(first, last...) {
		us += costs.OpUs(roofline.IssueOf(m, l, &o))
	}
	return us / 1e3
}

// Eager: the host issues every op of every layer (spec's inventory of what
// vLLM issues, at the default issue costs). Qwen3-30B-A3B at TP8/EP8 issues
// about 30 kernels and as many module and dispatcher calls a layer, while
// a decode step's kernels are short: the step lasts the host time plus the
// issue time plus the last layer's GPU tail, longer than the host time
// plus the kernels (the case of the eager vLLM runs whose TPOT the anchors
// underestimated). Replayed as a CUDA graph the same decode batch costs
// one replay and its kernels; piecewise graphs replay one piece per layer
// plus one and issue the attention ops eagerly.
func TestEagerHostBoundAndCUDAGraph(t *testing.T) {
	cfg := testConfig()
	cfg.Model, cfg.Layout = "qwen3-30b-a3b", spec.Layout{TP: 8, EP: 8}
	cfg.MoE.Routing = runresult.RoutingEven
	cfg.Engine.ExecutionMode = runresult.ExecEager
	eager := runDecode(t, cfg)
	cfg.Engine.ExecutionMode = runresult.ExecCUDAGraph
	graph := runDecode(t, cfg)
	cfg.Engine.ExecutionMode = runresult.ExecPiecewise
	piecewise := runDecode(t, cfg)
	m, d := lookup(t, "qwen3-30b-a3b", "h100")
	l := spec.Layout{TP: 8, EP: 8}.Normalize()
	costs := roofline.DefaultIssueCosts(d)
	issue := issueMsOf(m, l, costs, false, true)
	var attnUs float64
	for _, o := range spec.LayerOps(m, l, 0) {
		if o.Family == spec.FamilyAttention && o.Name != spec.OpAttnPrefill {
			attnUs += costs.OpUs(roofline.IssueOf(m, l, &o))
		}
	}
	for i := range eager {
		e, g, p := eager[i].Stages[0], graph[i].Stages[0], piecewise[i].Stages[0]
		de, dg, dp := (e.EndS-e.StartS)*1e3, (g.EndS-g.StartS)*1e3, (p.EndS-p.StartS)*1e3
		host := e.Cost.Ms[cost.CompHostBefore] + e.Cost.Ms[cost.CompHostAfter]
		layerGPU := e.Cost.DeviceMs() / float64(m.NumLayers)
		if !near(e.Cost.Ms[cost.CompLaunch], issue) || !(de > host+e.Cost.DeviceMs()) || de < host+issue || de > host+issue+layerGPU {
			t.Errorf("decode step %d eager: %g ms; host %g + kernels %g; issue %g ms (inventory %g ms)", i, de, host, e.Cost.DeviceMs(), e.Cost.Ms[cost.CompLaunch], issue)
		}
		replay := costs.GraphLaunchUs / 1e3
		if !(dg < de) || !g.Cost.Graph || !near(g.Cost.Ms[cost.CompLaunch], replay) || !near(dg, host+replay+g.Cost.DeviceMs()) {
			t.Errorf("decode step %d: CUDA graph %g ms (replay %g ms, device %g ms), eager %g ms", i, dg, g.Cost.Ms[cost.CompLaunch], g.Cost.DeviceMs(), de)
		}
		// Piecewise: 49 pieces for 48 layers plus the attention ops
		// (reshapes, KV save, decode, output) of every layer.
		want := (float64(m.NumLayers+1)*costs.PieceLaunchUs + float64(m.NumLayers)*attnUs) / 1e3
		if !near(p.Cost.Ms[cost.CompLaunch], want) || !(dp < de) || !p.Cost.Graph {
			t.Errorf("decode step %d: piecewise issue %g ms, want %g; %g ms vs eager %g ms", i, p.Cost.Ms[cost.CompLaunch], want, dp, de)
		}
	}
	t.Logf("decode step at TP8/EP8: eager %.3f ms (kernels %.3f ms, issue %.3f ms), CUDA graph %.3f ms, piecewise %.3f ms",
		(eager[0].EndS-eager[0].StartS)*1e3, eager[0].Stages[0].Cost.DeviceMs(), eager[0].Stages[0].Cost.Ms[cost.CompLaunch],
		(graph[0].EndS-graph[0].StartS)*1e3, (piecewise[0].EndS-piecewise[0].StartS)*1e3)
	// The prompt is not decode-only: the CUDA graph run issues it eagerly.
	_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 500, 2}))
	if log.steps[0].Stages[0].Cost.Graph != (cfg.Engine.ExecutionMode == runresult.ExecPiecewise) {
		t.Errorf("500-token prompt step graph=%v in %s mode", log.steps[0].Stages[0].Cost.Graph, cfg.Engine.ExecutionMode)
	}
}

// A CUDA graph pads a decode batch to its capture size: 5 sequences run as
// 8 in the token-wise ops.
func TestCUDAGraphPadsBatch(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	l := spec.Layout{TP: 1}
	newCM := func(mode string) *cost.OpCostModel {
		cm, err := cost.NewOpCostModel(cost.OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, ExecutionMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	var g5, e5, e8 cost.StepCost
	b5 := decodeShape(100, 100, 100, 100, 100)
	b8 := decodeShape(100, 100, 100, 100, 100, 0, 0, 0)
	newCM(runresult.ExecCUDAGraph).StageCost(&b5, 0, &g5)
	newCM(runresult.ExecEager).StageCost(&b5, 0, &e5)
	newCM(runresult.ExecEager).StageCost(&b8, 0, &e8)
	// Token-wise ops (linear, LM head, attention reshapes) run at 8, decode
	// attention on the 5 real sequences.
	if !near(g5.Ms[cost.CompLinear], e8.Ms[cost.CompLinear]) || !(g5.Ms[cost.CompLinear] > e5.Ms[cost.CompLinear]) ||
		!(e5.Ms[cost.CompAttention] < g5.Ms[cost.CompAttention] && g5.Ms[cost.CompAttention] <= e8.Ms[cost.CompAttention]) {
		t.Errorf("linear: graph of 5 %g ms, eager 5 %g, eager 8 %g; attention graph %g, eager 5 %g, eager 8 %g", g5.Ms[cost.CompLinear], e5.Ms[cost.CompLinear], e8.Ms[cost.CompLinear], g5.Ms[cost.CompAttention], e5.Ms[cost.CompAttention], e8.Ms[cost.CompAttention])
	}
}

// Async scheduling: when the stage ran a step right up to this one, the
// host work of a step hides behind the forward pass, up to what the host
// does not spend issuing that forward: a back-to-back step lasts
// max(forward, host + issue). The first step after idle still pays its
// host time before the forward pass.
func TestAsyncSchedulingHidesHost(t *testing.T) {
	for _, hostMs := range []float64{1, 20} {
		cfg := testConfig()
		cfg.Calibration.HostMsPerStep = hostMs
		sync := runDecode(t, cfg)
		cfg.Engine.AsyncScheduling = true
		async := runDecode(t, cfg)
		_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 500, 12}))
		first := log.steps[0].Stages[0]
		if got := (first.EndS - first.StartS) * 1e3; first.Overlap || !near(got, hostMs+first.Cost.GPUMs()) {
			t.Errorf("host %g ms: first step after idle %g ms, want host + forward %g ms", hostMs, got, hostMs+first.Cost.GPUMs())
		}
		for i := range sync {
			s, a := sync[i].Stages[0], async[i].Stages[0]
			ds, da := (s.EndS-s.StartS)*1e3, (a.EndS-a.StartS)*1e3
			g, issue := a.Cost.GPUMs(), a.Cost.Ms[cost.CompLaunch]
			if !a.Overlap || !near(ds, hostMs+g) || !near(da, math.Max(g, hostMs+issue)) {
				t.Errorf("host %g ms, decode step %d: sync %g ms, async %g ms (overlap %v), forward %g ms, issue %g ms", hostMs, i, ds, da, a.Overlap, g, issue)
			}
			var part [cost.NumComponents]float64
			a.Cost.Attribute(true, true, &part)
			if hidden := hostMs - part[cost.CompHostBefore]; !near(hidden, math.Min(hostMs, g-issue)) {
				t.Errorf("host %g ms: %g ms hidden, want %g", hostMs, hidden, math.Min(hostMs, g-issue))
			}
		}
	}
}

// An unknown execution mode is refused when the run is built.
func TestUnknownExecutionMode(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.ExecutionMode = "graphs"
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "execution_mode") {
		t.Errorf("unknown mode: %v", err)
	}
}
