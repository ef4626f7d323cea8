package simulate

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestCaptureSizes(t *testing.T) {
	for _, tc := range []struct{ max, n, want int }{
		{512, 1, 1}, {512, 2, 2}, {512, 3, 4}, {512, 4, 4}, {512, 5, 8}, {512, 9, 16}, {512, 512, 512}, {512, 513, 0},
		{64, 60, 64}, {60, 57, 0}, {60, 56, 56}, {3, 3, 0}, {3, 2, 2}, {6, 5, 0}, {6, 4, 4},
	} {
		if got := (captureSizes{max: tc.max}).pad(tc.n); got != tc.want {
			t.Errorf("max %d: batch %d pads to %d, want %d", tc.max, tc.n, got, tc.want)
		}
	}
}

// runDecode runs one request (500-token prompt, 12 output tokens) and
// returns its decode steps.
func runDecode(t *testing.T, cfg Config) []StepRecord {
	t.Helper()
	_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 500, 12}))
	return log.steps[1:]
}

// Eager: every kernel is launched from the host. Qwen3-30B-A3B at TP8/EP8
// runs about 1,100 kernels a decode step, most of them shorter than their
// 5 us launch, so a decode step lasts the host time plus the launches,
// longer than the host time plus the sum of its kernel times (the case of
// the eager vLLM runs whose TPOT the anchors underestimated). Replayed as
// a CUDA graph the same decode batch costs one launch and is shorter;
// piecewise graphs launch the attention kernels and one graph per piece.
func TestEagerHostBoundAndCUDAGraph(t *testing.T) {
	cfg := testConfig()
	cfg.Model, cfg.Layout = "qwen3-30b-a3b", spec.Layout{TP: 8, EP: 8}
	cfg.MoE.Routing = RoutingEven
	cfg.Engine.ExecutionMode = ExecEager
	eager := runDecode(t, cfg)
	cfg.Engine.ExecutionMode = ExecCUDAGraph
	graph := runDecode(t, cfg)
	cfg.Engine.ExecutionMode = ExecPiecewise
	piecewise := runDecode(t, cfg)
	m, d := lookup(t, "qwen3-30b-a3b", "h100")
	for i := range eager {
		e, g, p := eager[i].Stages[0], graph[i].Stages[0], piecewise[i].Stages[0]
		de, dg, dp := (e.EndS-e.StartS)*1e3, (g.EndS-g.StartS)*1e3, (p.EndS-p.StartS)*1e3
		host := e.Cost.Ms[CompHostBefore] + e.Cost.Ms[CompHostAfter]
		// The eager step is the later of the two timelines: the host
		// launching every kernel, or the GPU running them.
		launches := float64(e.Cost.Kernels) * d.LaunchUs / 1e3
		if !near(de, host+math.Max(launches, e.Cost.DeviceMs())) {
			t.Errorf("decode step %d eager: %g ms; host %g + kernels %g = %g; launches %d x %g us", i, de, host, e.Cost.DeviceMs(), host+e.Cost.DeviceMs(), e.Cost.Kernels, d.LaunchUs)
		}
		if !(dg <= de) || !g.Cost.Graph || !near(g.Cost.Ms[CompLaunch], d.LaunchUs/1e3) || !near(dg, host+g.Cost.DeviceMs()) {
			t.Errorf("decode step %d: CUDA graph %g ms (launch %g ms, device %g ms), eager %g ms", i, dg, g.Cost.Ms[CompLaunch], g.Cost.DeviceMs(), de)
		}
		// Piecewise: per layer 2 attention kernels (KV save, decode; the
		// reshapes are views) plus 49 pieces for 48 layers.
		if want := float64(2*m.NumLayers+m.NumLayers+1) * d.LaunchUs / 1e3; !near(p.Cost.Ms[CompLaunch], want) || !(dp <= de) {
			t.Errorf("decode step %d: piecewise launch %g ms, want %g; %g ms vs eager %g ms", i, p.Cost.Ms[CompLaunch], want, dp, de)
		}
	}
	t.Logf("decode step at TP8/EP8: eager %.3f ms (kernels %.3f ms, %d launches), CUDA graph %.3f ms, piecewise %.3f ms",
		(eager[0].EndS-eager[0].StartS)*1e3, eager[0].Stages[0].Cost.DeviceMs(), eager[0].Stages[0].Cost.Kernels,
		(graph[0].EndS-graph[0].StartS)*1e3, (piecewise[0].EndS-piecewise[0].StartS)*1e3)
	// The prompt is not decode-only: the CUDA graph run launches it eagerly.
	_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 500, 2}))
	if log.steps[0].Stages[0].Cost.Graph != (cfg.Engine.ExecutionMode == ExecPiecewise) {
		t.Errorf("500-token prompt step graph=%v in %s mode", log.steps[0].Stages[0].Cost.Graph, cfg.Engine.ExecutionMode)
	}
}

// A CUDA graph pads a decode batch to its capture size: 5 sequences run as
// 8 in the token-wise ops.
func TestCUDAGraphPadsBatch(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	l := spec.Layout{TP: 1}
	newCM := func(mode string) *OpCostModel {
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, ExecutionMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	var g5, e5, e8 StepCost
	b5 := decodeShape(100, 100, 100, 100, 100)
	b8 := decodeShape(100, 100, 100, 100, 100, 0, 0, 0)
	newCM(ExecCUDAGraph).StageCost(&b5, 0, &g5)
	newCM(ExecEager).StageCost(&b5, 0, &e5)
	newCM(ExecEager).StageCost(&b8, 0, &e8)
	// Token-wise ops (linear, LM head, attention reshapes) run at 8, decode
	// attention on the 5 real sequences.
	if !near(g5.Ms[CompLinear], e8.Ms[CompLinear]) || !(g5.Ms[CompLinear] > e5.Ms[CompLinear]) ||
		!(e5.Ms[CompAttention] < g5.Ms[CompAttention] && g5.Ms[CompAttention] <= e8.Ms[CompAttention]) {
		t.Errorf("linear: graph of 5 %g ms, eager 5 %g, eager 8 %g; attention graph %g, eager 5 %g, eager 8 %g", g5.Ms[CompLinear], e5.Ms[CompLinear], e8.Ms[CompLinear], g5.Ms[CompAttention], e5.Ms[CompAttention], e8.Ms[CompAttention])
	}
}

// Async scheduling: when the stage ran a step right up to this one, the
// host work of a step hides behind the forward pass, up to its length:
// a back-to-back step lasts max(forward, host). The first step after idle
// still pays its host time before the forward pass.
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
			g := a.Cost.GPUMs()
			if !a.Overlap || !near(ds, hostMs+g) || !near(da, math.Max(g, hostMs)) {
				t.Errorf("host %g ms, decode step %d: sync %g ms, async %g ms (overlap %v), forward %g ms", hostMs, i, ds, da, a.Overlap, g)
			}
			var part [NumComponents]float64
			a.Cost.Attribute(true, true, &part)
			if hidden := hostMs - part[CompHostBefore]; !near(hidden, math.Min(hostMs, g)) {
				t.Errorf("host %g ms: %g ms hidden, want %g", hostMs, hidden, math.Min(hostMs, g))
			}
		}
	}
}

// Host time is never silently zero: by default it comes from spec's host
// model of the device class, split before (schedule, inputs, hand-off) and
// after (sampling, outputs) the forward pass; a CPU-overhead profile's
// HOST_WALL predictors replace the parts they have; a calibration replaces
// it all.
func TestHostTimeSources(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	l := spec.Layout{TP: 2}.Normalize()
	b := decodeShape(100, 200, 300, 400, 500, 600, 700, 800)
	stage := func(c OpCostConfig) (StepCost, CostModelReport) {
		c.Model, c.Layout, c.Device, c.Limits = m, l, d, testLimits
		cm, err := NewOpCostModel(c)
		if err != nil {
			t.Fatal(err)
		}
		var sc StepCost
		cm.StageCost(&b, 0, &sc)
		return sc, cm.Report()
	}
	host := func(op string) float64 { return spec.HostOpMs(d, op, 2, 8, 0, 8, m.VocabSize) }
	c, r := stage(OpCostConfig{})
	before := host(spec.OpCPUSchedule) + host(spec.OpCPUPrepareInputs) + host(spec.OpCPURayComm)
	after := host(spec.OpCPUSampler) + host(spec.OpCPUProcessOutputs)
	if !near(c.Ms[CompHostBefore], before) || !near(c.Ms[CompHostAfter], after) || !(before > 0.1 && after > 0.1) {
		t.Errorf("default host %g + %g ms, want %g + %g", c.Ms[CompHostBefore], c.Ms[CompHostAfter], before, after)
	}
	if r.HostSource != HostFromDefault || !strings.Contains(r.HostNote, "0.04 ms") {
		t.Errorf("report host %q: %q", r.HostSource, r.HostNote)
	}
	// A profile with the schedule and sampler parts.
	prof := predSet{
		{Op: spec.OpCPUSchedule, Measurement: spec.HostWall, TP: 2}: linearPred{a: 0.5, b: 0.01},
		{Op: spec.OpCPUSampler, Measurement: spec.HostWall, TP: 2}:  linearPred{a: 0.25},
	}
	c, r = stage(OpCostConfig{HostPredictors: prof})
	if !near(c.Ms[CompHostBefore], 0.5+0.08+host(spec.OpCPUPrepareInputs)+host(spec.OpCPURayComm)) || !near(c.Ms[CompHostAfter], 0.25+host(spec.OpCPUProcessOutputs)) || r.HostSource != HostFromProfile {
		t.Errorf("profiled host %g + %g ms (%s)", c.Ms[CompHostBefore], c.Ms[CompHostAfter], r.HostSource)
	}
	c, r = stage(OpCostConfig{HostPredictors: prof, Calibration: Calibration{HostMsPerStep: 2}})
	if c.Ms[CompHostBefore] != 2 || c.Ms[CompHostAfter] != 0 || r.HostSource != HostFromCalibration || r.HostMsPerStep != 2 {
		t.Errorf("calibrated host %g + %g ms (%+v)", c.Ms[CompHostBefore], c.Ms[CompHostAfter], r)
	}
	if _, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, HostPredictors: predSet{}}); err == nil {
		t.Error("a host bundle without HOST_WALL predictors for the TP was accepted")
	}
}

// CUDA_EVENT op times include eager launch gaps: a run with them is eager
// by default and refuses a CUDA graph mode.
func TestExecutionModeFollowsMeasurement(t *testing.T) {
	for _, tc := range []struct {
		asked, measurement, want string
		fails                    bool
	}{
		{"", spec.KernelOnly, ExecCUDAGraph, false},
		{"", spec.CUDAEvent, ExecEager, false},
		{ExecEager, spec.CUDAEvent, ExecEager, false},
		{ExecCUDAGraph, spec.CUDAEvent, "", true},
		{ExecPiecewise, spec.CUDAEvent, "", true},
		{ExecPiecewise, spec.KernelOnly, ExecPiecewise, false},
	} {
		got, err := resolveExecutionMode(tc.asked, tc.measurement)
		if got != tc.want || (err != nil) != tc.fails {
			t.Errorf("%q with %s: %q, %v", tc.asked, tc.measurement, got, err)
		}
	}
	cfg := testConfig()
	cfg.Engine.ExecutionMode = "graphs"
	if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "execution_mode") {
		t.Errorf("unknown mode: %v", err)
	}
}
