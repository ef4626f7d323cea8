package cost

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// fakePred answers a constant and counts queries whose first feature is
// above limit as extrapolated.
type fakePred struct {
	ms, limit float64
	queries   int64
	extrap    int64
}

func (f *fakePred) PredictMs(x []float64) float64 {
	f.queries++
	if x[0] > f.limit {
		f.extrap++
	}
	return f.ms
}

func (f *fakePred) Extrapolated() int64 { return f.extrap }

type fakeSet map[spec.OpKey]*fakePred

func (s fakeSet) Predictor(k spec.OpKey) (OpPredictor, bool) {
	p, ok := s[k]
	if !ok {
		return nil, false
	}
	return p, true
}

func (s fakeSet) Keys() []spec.OpKey {
	var out []spec.OpKey
	for k := range s {
		out = append(out, k)
	}
	return out
}

// domainSet makes a predictor of ms for every key of spec.QueryDomain but
// the ops in skip.
func domainSet(m *spec.Model, l spec.Layout, lim spec.EngineLimits, measurement string, ms float64, skip ...string) fakeSet {
	s := fakeSet{}
	for _, e := range spec.QueryDomain(m, l, lim) {
		if slices.Contains(skip, e.Key.Op) {
			continue
		}
		k := e.Key
		k.Measurement = measurement
		s[k] = &fakePred{ms: ms, limit: math.Inf(1)}
	}
	return s
}

var testLimits = spec.EngineLimits{MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, MaxModelLen: 8192, BlockSize: spec.DefaultBlockSize}

// Every predictor the cost model asks for is a key spec.QueryDomain
// samples, so collect, fit --check-coverage and simulate agree.
func TestOpKeysAreInQueryDomain(t *testing.T) {
	for _, tc := range []struct {
		model string
		l     spec.Layout
	}{
		{"llama-3.1-8b", spec.Layout{TP: 1}},
		{"llama-3.3-70b", spec.Layout{TP: 4, PP: 2}},
		{"qwen3-30b-a3b", spec.Layout{TP: 4, EP: 4}},
		{"deepseek-v3", spec.Layout{TP: 8, PP: 2}},
	} {
		m, d := lookup(t, tc.model, "h100")
		l := tc.l.Normalize()
		domain := map[spec.OpKey]bool{}
		for _, e := range spec.QueryDomain(m, l, testLimits) {
			domain[e.Key] = true
		}
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits})
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range cm.stages {
			for _, g := range []*opGroup{&st.tokens, &st.seqs, &st.prefill, &st.decode} {
				for _, p := range g.ops {
					k := p.key
					k.Measurement = ""
					if !domain[k] {
						t.Errorf("%s %s: the cost model asks for %s, which spec.QueryDomain does not sample", tc.model, l, k)
					}
				}
			}
		}
	}
}

// With a bundle, each op's time is its predictor's, added up over the
// layers; ops the bundle lacks fall back to the roofline and are counted;
// extrapolated queries are counted per step.
func TestBundlePredictorsFallbacksAndExtrapolation(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	l := spec.Layout{TP: 1}.Normalize()
	set := domainSet(m, l, testLimits, spec.KernelOnly, 0.1, spec.OpAttnDecode)
	up := set[spec.OpKey{Op: spec.OpMLPUpProj, Measurement: spec.KernelOnly, TP: 1}]
	up.limit = 512
	cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, Predictors: set, BundleName: "fake.arrow"})
	if err != nil {
		t.Fatal(err)
	}
	var c StepCost
	prefill := prefillShape(1000, 0)
	cm.StageCost(&prefill, 0, &c)
	// Per layer: 8 linear_op ops (norms, projections, rope, activation) and
	// 4 attention ops (reshapes, KV save, prefill); plus embedding and LM head.
	if want := (8*32 + 2) * 0.1; math.Abs(c.Ms[CompLinear]-want) > 1e-9 {
		t.Errorf("linear %g ms, want %g", c.Ms[CompLinear], want)
	}
	if want := 4 * 32 * 0.1; math.Abs(c.Ms[CompAttention]-want) > 1e-9 {
		t.Errorf("attention %g ms, want %g", c.Ms[CompAttention], want)
	}
	if want := issueMsOf(m, l, roofline.DefaultIssueCosts(d), true, false); c.Kernels != 10*32+1+2 || math.Abs(c.Ms[CompLaunch]-want) > 1e-9 {
		t.Errorf("%d kernels, issue %g ms, want %g", c.Kernels, c.Ms[CompLaunch], want)
	}
	cm.StageCost(&prefill, 0, &c) // cached: the predictor is not asked again
	if up.queries != 1 {
		t.Errorf("mlp_up_proj asked %d times for two identical steps, want 1 (cached)", up.queries)
	}
	decode := decodeShape(100, 2000, 3000)
	cm.StageCost(&decode, 0, &c)
	roof := roofline.Roofline{Device: roofline.NewDevice(d)}
	var dec spec.Op
	for _, o := range spec.LayerOps(m, l, 0) {
		if o.Name == spec.OpAttnDecode {
			dec = o
		}
	}
	wantAttn := 3*32*0.1 + 32*roof.KernelMs(&dec, []float64{3, 1700})
	if math.Abs(c.Ms[CompAttention]-wantAttn) > 1e-9 {
		t.Errorf("decode attention %g ms, want predictors + roofline decode %g ms", c.Ms[CompAttention], wantAttn)
	}
	r := cm.Report()
	if len(r.RooflineFallbacks) != 1 || r.RooflineFallbacks[0].Queries != 1 || r.RooflineFallbacks[0].Op != (spec.OpKey{Op: spec.OpAttnDecode, Measurement: spec.KernelOnly, TP: 1}).String() {
		t.Errorf("fallbacks %+v, want attn_decode once", r.RooflineFallbacks)
	}
	if len(r.Extrapolated) != 1 || r.Extrapolated[0].Queries != 2 {
		t.Errorf("extrapolated %+v, want mlp_up_proj in both 1000-token steps", r.Extrapolated)
	}
	if r.Measurement != spec.KernelOnly || r.Label == "" {
		t.Errorf("report %+v", r)
	}
}

// CUDA_EVENT predictors hold their own launch gaps: the issue timeline
// overlaps them instead of adding to them. The forward is never shorter
// than either timeline and never their sum.
func TestCUDAEventBundleOverlapsIssue(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	l := spec.Layout{TP: 1}.Normalize()
	set := domainSet(m, l, testLimits, spec.CUDAEvent, 0.01)
	cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, Predictors: set})
	if err != nil {
		t.Fatal(err)
	}
	var c StepCost
	b := decodeShape(10)
	cm.StageCost(&b, 0, &c)
	dev, issue := c.DeviceMs(), c.Ms[CompLaunch]
	if !(issue > 0) || c.GPUMs() < max(dev, issue) || c.GPUMs() >= dev+issue {
		t.Errorf("device %g ms, issue %g ms, forward %g ms: want max <= forward < sum", dev, issue, c.GPUMs())
	}
	if cm.Report().Measurement != spec.CUDAEvent || len(cm.Report().RooflineFallbacks) != 0 || !strings.Contains(cm.Report().LaunchNote, "CUDA_EVENT") {
		t.Errorf("report %+v", cm.Report())
	}
}

// Calibration scales op families, the host issue costs and the host time;
// the step is host + the forward's two timelines.
func TestCalibration(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	l := spec.Layout{TP: 2}.Normalize()
	base, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, ExecutionMode: runresult.ExecEager})
	if err != nil {
		t.Fatal(err)
	}
	cal := runresult.Calibration{HostMsPerStep: 1.5, HostSpeed: 4, FamilyScale: map[string]float64{"attention": 2, "collective": 0.5}}
	if err := cal.Validate(); err != nil {
		t.Fatal(err)
	}
	cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, Calibration: cal, ExecutionMode: runresult.ExecEager})
	if err != nil {
		t.Fatal(err)
	}
	b := decodeShape(500, 600, 700, 800)
	var c0, c1 StepCost
	base.StageCost(&b, 0, &c0)
	cm.StageCost(&b, 0, &c1)
	for _, k := range []struct {
		comp  Component
		scale float64
	}{{CompLinear, 1}, {CompAttention, 2}, {CompTPComm, 0.5}} {
		if !near(c1.Ms[k.comp], k.scale*c0.Ms[k.comp]) || c0.Ms[k.comp] == 0 {
			t.Errorf("%s: %g ms calibrated, %g ms base, want x%g", k.comp, c1.Ms[k.comp], c0.Ms[k.comp], k.scale)
		}
	}
	if c1.Ms[CompHostBefore] != 1.5 || !near(c1.Ms[CompLaunch], 4*c0.Ms[CompLaunch]) {
		t.Errorf("host %g ms, issue %g ms, want 4 x %g", c1.Ms[CompHostBefore], c1.Ms[CompLaunch], c0.Ms[CompLaunch])
	}
	if want := 1.5 + c1.GPUMs(); c1.TotalMs() != want || c1.GPUMs() < math.Max(c1.DeviceMs(), c1.Ms[CompLaunch]) {
		t.Errorf("total %g, want %g", c1.TotalMs(), want)
	}
	// At four times the default issue costs the 4-sequence decode is host-bound.
	if !(c1.Ms[CompLaunch] > c1.DeviceMs()) {
		t.Errorf("issue %g ms, device %g ms: expected host-bound", c1.Ms[CompLaunch], c1.DeviceMs())
	}
	for _, bad := range []runresult.Calibration{{HostMsPerStep: -1}, {HostSpeed: -1}, {IssueScale: map[string]float64{"cuda": 2}}, {IssueScale: map[string]float64{"triton": 0}},
		{FamilyScale: map[string]float64{"gemm": 1}}, {FamilyScale: map[string]float64{"moe": 0}}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("calibration %+v accepted", bad)
		}
	}
}
