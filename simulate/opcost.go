package simulate

import (
	"fmt"
	"math"
	"sort"

	"github.com/ftk-dev/ftk/spec"
)

// OpCostConfig says what an OpCostModel prices.
type OpCostConfig struct {
	Model  *spec.Model
	Layout spec.Layout
	Device *spec.Device
	// Limits size the per-step caches (token budget, max sequences).
	Limits      spec.EngineLimits
	Calibration Calibration
	// Predictors is the model bundle; nil prices every op with the
	// built-in roofline device model.
	Predictors PredictorSet
	// BundleName labels the bundle in the report.
	BundleName string
}

// OpCostModel prices a step operator by operator: for each layer of a
// stage, the per-GPU ops of spec.LayerOps (attention prefill and decode only
// when the batch has them), the embedding on the first stage, the LM head on
// the last, the activation send between stages. Each op's time comes from
// its predictor in the bundle or, failing that, from spec.Roofline (counted
// per op and reported). In eager mode with KERNEL_ONLY times the step
// launches every kernel, so launch = kernels x per-launch cost.
//
// Ops priced by the step's token count alone (linear, norms, collectives,
// and MoE ops under an even expert load) are cached per token count, so a
// step costs two table lookups and the attention predictions.
type OpCostModel struct {
	model       *spec.Model
	layout      spec.Layout
	roof        spec.Roofline
	measurement string
	launchMs    float64
	hostMs      float64
	scale       [numDeviceComponents]float64
	stages      []stageModel
	predictors  bool
	label       string
	x           [2]float64
	scratch     memoEntry
}

// pricedOp is one op of a stage with its predictor (nil: roofline).
type pricedOp struct {
	op     spec.Op
	key    spec.OpKey
	pred   OpPredictor
	extrap extrapolationCounter
	comp   Component
	count  float64 // runs per step on the stage (its layers)
}

// memoEntry caches the device time of a stage's token-priced ops at one
// token count.
type memoEntry struct {
	ms     [numDeviceComponents]float64
	extrap uint64 // bit i set: op i was extrapolated by its predictor
	set    bool
}

// opGroup is a set of ops priced together, with per-op extrapolation
// counts.
type opGroup struct {
	ops     []pricedOp
	kernels int
	extrap  []int64
}

type stageModel struct {
	tokens, seqs, prefill, decode    opGroup
	byTokens, bySeqs                 []memoEntry
	steps, prefillSteps, decodeSteps int64
}

// NewOpCostModel resolves every op's predictor once, up front.
func NewOpCostModel(c OpCostConfig) (*OpCostModel, error) {
	m, l := c.Model, c.Layout.Normalize()
	cm := &OpCostModel{model: m, layout: l, roof: spec.Roofline{Device: c.Device}, measurement: spec.KernelOnly,
		hostMs: c.Calibration.HostMsPerStep, predictors: c.Predictors != nil}
	launchUs := c.Device.LaunchUs
	if c.Calibration.LaunchUs > 0 {
		launchUs = c.Calibration.LaunchUs
	}
	cm.launchMs = launchUs / 1e3
	if c.Predictors != nil {
		cm.measurement = bundleMeasurement(c.Predictors)
		cm.label = fmt.Sprintf("bundle %s (%s predictors; roofline for ops it lacks)", c.BundleName, cm.measurement)
	} else {
		cm.label = fmt.Sprintf("roofline: built-in %s device model (not measured)", c.Device.Name)
	}
	for comp := range cm.scale {
		cm.scale[comp] = c.Calibration.scale(componentFamily(Component(comp)))
	}
	first, last, between := spec.ModelOps(m, l)
	for s := 0; s < l.PP; s++ {
		st := stageModel{
			byTokens: make([]memoEntry, c.Limits.MaxNumBatchedTokens+1),
			bySeqs:   make([]memoEntry, c.Limits.MaxNumSeqs+1),
		}
		lo, hi := l.StageLayers(m, s)
		for i := lo; i < hi; i++ {
			for _, o := range spec.LayerOps(m, l, i) {
				g := &st.tokens
				switch o.Name {
				case spec.OpAttnPrefill:
					g = &st.prefill
				case spec.OpAttnDecode:
					g = &st.decode
				}
				cm.addOp(g, o, c.Predictors)
			}
		}
		if s == 0 {
			for _, o := range first {
				cm.addOp(&st.tokens, o, c.Predictors)
			}
		}
		if s == l.PP-1 {
			for _, o := range last {
				cm.addOp(&st.seqs, o, c.Predictors)
			}
		} else if between != nil {
			cm.addOp(&st.tokens, *between, c.Predictors)
		}
		for _, g := range []*opGroup{&st.tokens, &st.seqs, &st.prefill, &st.decode} {
			if len(g.ops) > 64 {
				return nil, fmt.Errorf("simulate: stage %d has %d distinct ops, more than the 64 the cost cache tracks", s, len(g.ops))
			}
			g.extrap = make([]int64, len(g.ops))
		}
		cm.stages = append(cm.stages, st)
	}
	return cm, nil
}

// componentFamily is the op family whose calibration scale a device
// component takes.
func componentFamily(c Component) spec.Family {
	switch c {
	case CompAttention:
		return spec.FamilyAttention
	case CompMoE:
		return spec.FamilyMoE
	case CompTPComm, CompEPComm, CompPPComm:
		return spec.FamilyCollective
	}
	return spec.FamilyLinear
}

func opComponent(o *spec.Op) Component {
	switch o.Family {
	case spec.FamilyAttention:
		return CompAttention
	case spec.FamilyMoE:
		return CompMoE
	case spec.FamilyCollective:
		switch o.Name {
		case spec.OpAllReduce:
			return CompTPComm
		case spec.OpSendRecv:
			return CompPPComm
		}
		return CompEPComm
	}
	return CompLinear
}

// addOp adds one run of o to group g, merging it with an identical op.
func (cm *OpCostModel) addOp(g *opGroup, o spec.Op, preds PredictorSet) {
	g.kernels += o.Kernels
	for i := range g.ops {
		if g.ops[i].op == o {
			g.ops[i].count++
			return
		}
	}
	p := pricedOp{op: o, key: opKey(&o, cm.layout, cm.measurement), comp: opComponent(&o), count: 1}
	if preds != nil {
		if pr, ok := preds.Predictor(p.key); ok {
			p.pred = pr
			p.extrap, _ = pr.(extrapolationCounter)
		}
	}
	g.ops = append(g.ops, p)
}

// price returns op p's time for features x (one run, calibrated) and
// whether its predictor extrapolated.
func (cm *OpCostModel) price(p *pricedOp, x []float64) (ms float64, extrapolated bool) {
	if p.pred == nil {
		return cm.roof.TimeMs(&p.op, x, cm.measurement) * cm.scale[p.comp], false
	}
	var before int64
	if p.extrap != nil {
		before = p.extrap.Extrapolated()
	}
	ms = p.pred.PredictMs(x) * cm.scale[p.comp]
	return ms, p.extrap != nil && p.extrap.Extrapolated() > before
}

// tokenFeatures fills the features of a token-priced op for a step of t
// tokens (per sequence count n for the LM head).
func (cm *OpCostModel) tokenFeatures(p *pricedOp, t int) []float64 {
	m, x := cm.model, &cm.x
	tf := float64(t)
	actBytes := tf * float64(m.HiddenSize) * 2 // BF16 activations
	switch p.op.Name {
	case spec.OpAllReduce, spec.OpSendRecv:
		x[0] = actBytes
	case spec.OpEPDispatch, spec.OpEPCombine:
		x[0] = actBytes * float64(m.TopK)
	case spec.OpMoEGroupedGEMM:
		// Even expert load: routed tokens split over EP ranks, each local
		// expert taking its share. Per-step routing draws replace this.
		routed := tf * float64(m.TopK) / float64(cm.layout.EP)
		x[0], x[1] = routed, math.Ceil(routed/float64(p.op.LocalExperts))
		return x[:2]
	default:
		x[0] = tf
	}
	return x[:1]
}

// memo returns the cached cost of group g at size n, filling it on first
// use.
func (cm *OpCostModel) memo(g *opGroup, table []memoEntry, n int) *memoEntry {
	e := &cm.scratch
	if n < len(table) {
		e = &table[n]
		if e.set {
			return e
		}
	} else {
		*e = memoEntry{}
	}
	for i := range g.ops {
		p := &g.ops[i]
		ms, ex := cm.price(p, cm.tokenFeatures(p, n))
		e.ms[p.comp] += ms * p.count
		if ex {
			e.extrap |= 1 << i
		}
	}
	e.set = true
	return e
}

func (g *opGroup) countExtrap(mask uint64) {
	for i := range g.extrap {
		if mask&(1<<i) != 0 {
			g.extrap[i]++
		}
	}
}

// attention adds the time of an attention group for features (a, b).
func (cm *OpCostModel) attention(g *opGroup, a, b float64, c *StepCost) {
	cm.x[0], cm.x[1] = a, b
	for i := range g.ops {
		p := &g.ops[i]
		ms, ex := cm.price(p, cm.x[:2])
		c.Ms[p.comp] += ms * p.count
		if ex {
			g.extrap[i]++
		}
	}
	c.Kernels += g.kernels
}

// StageCost implements CostModel. Attention features come from spec's batch
// reductions: prefill chunks as one equivalent (context, chunk) sequence,
// decodes as (batch size, mean context).
func (cm *OpCostModel) StageCost(b *BatchShape, stage int, c *StepCost) {
	st := &cm.stages[stage]
	*c = StepCost{}
	st.steps++
	e := cm.memo(&st.tokens, st.byTokens, b.Tokens)
	copy(c.Ms[:numDeviceComponents], e.ms[:])
	if e.extrap != 0 {
		st.tokens.countExtrap(e.extrap)
	}
	c.Kernels = st.tokens.kernels
	if len(st.seqs.ops) > 0 {
		e := cm.memo(&st.seqs, st.bySeqs, b.Seqs)
		for i := range e.ms {
			c.Ms[i] += e.ms[i]
		}
		if e.extrap != 0 {
			st.seqs.countExtrap(e.extrap)
		}
		c.Kernels += st.seqs.kernels
	}
	if len(b.PrefillChunks) > 0 {
		st.prefillSteps++
		kv, chunk := spec.PrefillEquivalent(b.PrefillChunks, b.PrefillContexts)
		cm.attention(&st.prefill, kv, chunk, c)
	}
	if len(b.DecodeContexts) > 0 {
		st.decodeSteps++
		n, kv := spec.DecodeEquivalent(b.DecodeContexts)
		cm.attention(&st.decode, n, kv, c)
	}
	if cm.measurement == spec.KernelOnly {
		c.Ms[CompLaunch] = float64(c.Kernels) * cm.launchMs
	}
	c.Ms[CompHostBefore] = cm.hostMs
}

// OpCount is a number of queries of one predictor key.
type OpCount struct {
	Op      string `json:"op"`
	Queries int64  `json:"queries"`
}

// CostModelReport describes the cost model of a run and how it answered.
type CostModelReport struct {
	Label string `json:"label"`
	// Measurement is the measurement type of every op time of the run.
	Measurement   string  `json:"measurement_type"`
	ExecutionMode string  `json:"execution_mode"`
	LaunchUs      float64 `json:"launch_us"`
	HostMsPerStep float64 `json:"host_ms_per_step"`
	// HostNote says where host time comes from.
	HostNote string `json:"host_note"`
	// RooflineFallbacks counts, per op the bundle lacks, the queries the
	// roofline answered instead (one per op per step).
	RooflineFallbacks []OpCount `json:"roofline_fallbacks,omitempty"`
	// Extrapolated counts, per op, the queries its predictor answered
	// outside its sampled domain.
	Extrapolated []OpCount `json:"extrapolated,omitempty"`
}

// Report describes the model and the fallbacks and extrapolations so far.
func (cm *OpCostModel) Report() CostModelReport {
	r := CostModelReport{Label: cm.label, Measurement: cm.measurement, ExecutionMode: "eager",
		LaunchUs: cm.launchMs * 1e3, HostMsPerStep: cm.hostMs,
		HostNote: "host time per step from the calibration (host_ms_per_step); not modelled otherwise"}
	fallback, extrap := map[string]int64{}, map[string]int64{}
	for si := range cm.stages {
		st := &cm.stages[si]
		for _, gs := range []struct {
			g     *opGroup
			steps int64
		}{{&st.tokens, st.steps}, {&st.seqs, st.steps}, {&st.prefill, st.prefillSteps}, {&st.decode, st.decodeSteps}} {
			for i := range gs.g.ops {
				p := &gs.g.ops[i]
				k := p.key.String()
				if cm.predictors && p.pred == nil && gs.steps > 0 {
					fallback[k] += gs.steps
				}
				if n := gs.g.extrap[i]; n > 0 {
					extrap[k] += n
				}
			}
		}
	}
	r.RooflineFallbacks, r.Extrapolated = sortedCounts(fallback), sortedCounts(extrap)
	return r
}

func sortedCounts(m map[string]int64) []OpCount {
	out := make([]OpCount, 0, len(m))
	for k, n := range m {
		out = append(out, OpCount{Op: k, Queries: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	if len(out) == 0 {
		return nil
	}
	return out
}
