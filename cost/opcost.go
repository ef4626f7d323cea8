package cost

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// OpCostConfig says what an OpCostModel prices.
type OpCostConfig struct {
	Model  *spec.Model
	Layout spec.Layout
	Device *spec.Device
	// Limits size the per-step caches (token budget, max sequences).
	Limits      spec.EngineLimits
	Calibration runresult.Calibration
	// Predictors is the model bundle; nil prices every op with the
	// built-in roofline device model.
	Predictors PredictorSet
	// BundleName labels the bundle in the report.
	BundleName string
	// HostPredictors holds HOST_WALL predictors of the host-side step parts
	// (a CPU-overhead profile); nil means those of Predictors, if any, else
	// roofline's default host model.
	HostPredictors PredictorSet
	// ExecutionMode is ExecEager, ExecCUDAGraph or ExecPiecewise; empty
	// resolves as resolveExecutionMode says.
	ExecutionMode string
	// MaxCaptureSize is the largest CUDA graph batch (0: 512).
	MaxCaptureSize int
	// MoE routes MoE layers (zero value: uniform routing, naive backend).
	MoE runresult.MoEConfig
	// Histogram is the expert histogram of replay routing.
	Histogram *ExpertHistogram
	// ExtraFirstOps run on the first stage after the embedding, once per
	// step (a speculative head's fusion layer, spec.Drafter.FusionOp).
	ExtraFirstOps []spec.Op
	// VLLMVersion is the vLLM release simulated ("" : not given); it picks
	// the kernels the device model prices (roofline.KernelsFor).
	VLLMVersion string
	// RoutingTables, when set, shares routing tables with the other cost
	// models given it (moe_shared.go); nil: this model builds its own.
	RoutingTables *RoutingTables
}

// OpCostModel prices a step operator by operator: for each layer of a
// stage, the per-GPU ops of spec.LayerOps (attention prefill and decode only
// when the batch has them), the embedding on the first stage, the LM head on
// the last, the activation send between stages. Each op's time comes from
// its predictor in the bundle or, failing that, from roofline.Roofline (counted
// per op and reported).
//
// Ops priced by the step's token count alone (linear, norms, collectives,
// MoE gating and shuffling) are cached per token count, so a step costs
// two table lookups and the attention predictions. The grouped GEMM (and,
// with an all-to-all backend, EP dispatch and combine) depends on where
// the router sends the tokens: it is priced per MoE layer and step from a
// routing draw (moe_tables.go).
//
// On top of the device time come the CPU timeline of the forward pass
// (issue.go, timeline.go: what the host spends issuing each op in the
// execution mode of execmode.go, overlapped with the GPU) and the host
// time before and after it (host.go).
type OpCostModel struct {
	model       *spec.Model
	layout      spec.Layout
	roof        roofline.Roofline
	measurement string
	exec        string
	capture     captureSizes
	issue       *issueModel
	issueNote   string
	scale       [NumDeviceComponents]float64
	stages      []stageModel
	predictors  bool
	label       string
	profiles    runresult.Profiles
	allToAll    bool
	// exchange describes the EP dispatch and combine of a data-parallel
	// layout (its token counts are set per step).
	exchange spec.EPExchange
	routing  *routingModel
	host     *hostModel
	gating   []runresult.GatingChoice
	matched  map[string]string
	x        [3]float64
	scratch  memoEntry
	// split holds a step's attention batch when it has multi-token
	// decodes (BatchShape.attentionSplit).
	split BatchShape
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
	ms     [NumDeviceComponents]float64
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
	tokens, seqs, prefill, decode opGroup
	// prefillLocal and decodeLocal are the attention of local layers
	// (sliding window, chunked): their context is capped at the window.
	prefillLocal, decodeLocal opGroup
	// routed holds the MoE ops priced from routing draws; routers is the
	// router of each MoE layer on the stage.
	routed                           opGroup
	routers                          []int
	byTokens, bySeqs, routedByTokens []memoEntry
	steps, prefillSteps, decodeSteps int64
	// decodeSeqSum and decodeCtxSum add up the decode batch and its mean
	// context over decode steps (the breakdown's per-op table).
	decodeSeqSum, decodeCtxSum float64
}

// NewOpCostModel resolves every op's predictor once, up front.
func NewOpCostModel(c OpCostConfig) (*OpCostModel, error) {
	m, l := c.Model, c.Layout.Normalize()
	c.MoE.Resolve()
	cm := &OpCostModel{model: m, layout: l, roof: roofline.Roofline{Device: roofline.NewDevice(c.Device), Kernels: roofline.KernelsFor(c.Device.Arch, c.VLLMVersion)}, measurement: spec.KernelOnly,
		predictors: c.Predictors != nil, allToAll: spec.RoutesCopies(c.MoE.All2AllBackend), matched: map[string]string{},
		exchange: spec.EPExchange{Backend: c.MoE.All2AllBackend, DP: l.DP, Ranks: l.TP * l.DP, Hidden: m.HiddenSize, Experts: m.NumExperts}}
	if c.Predictors != nil {
		cm.measurement = bundleMeasurement(c.Predictors)
		cm.label = fmt.Sprintf("bundle %s (%s predictors; roofline for ops it lacks)", c.BundleName, cm.measurement)
		cm.profiles = profilesOf(c.Predictors, c.Limits)
	} else {
		cm.label = fmt.Sprintf("roofline: built-in %s device model (not measured)", c.Device.Name)
		cm.profiles = rooflineProfiles(c.Device.Name)
	}
	var err error
	if cm.exec, err = resolveExecutionMode(c.ExecutionMode, cm.measurement); err != nil {
		return nil, err
	}
	// vLLM compiles the model (Inductor) unless it runs eager; the
	// roofline prices the ops no predictor covers as compiled code then.
	cm.roof.Compiled = cm.exec != runresult.ExecEager
	cm.capture = captureSizes{max: c.MaxCaptureSize}
	if cm.capture.max == 0 {
		cm.capture.max = min(defaultMaxCaptureSize, c.Limits.MaxNumBatchedTokens)
	}
	cm.capture.max = min(cm.capture.max, c.Limits.MaxNumBatchedTokens)
	// vLLM bounds FlashAttention's key split for steps within the capture
	// size under full CUDA graphs only (roofline.Roofline.CaptureTokens).
	cm.roof.CaptureTokens = cm.capture.max
	if cm.exec == runresult.ExecEager || cm.exec == runresult.ExecPiecewise {
		cm.roof.CaptureTokens = -1
	}
	for comp := range cm.scale {
		cm.scale[comp] = c.Calibration.Scale(componentFamily(Component(comp)))
	}
	if cm.host, err = newHostModel(&c, l); err != nil {
		return nil, err
	}
	costs, note := issueCosts(&c, l)
	cm.issue, cm.issueNote = newIssueModel(m, l, costs), note
	drawn := m.IsMoE() && c.MoE.Routing != runresult.RoutingEven
	// Data-parallel ranks route the tokens of every rank together: the
	// grouped GEMM and the exchange are priced per lockstep step at the
	// group's token count, up to DP x the token budget.
	lockstep := m.IsMoE() && l.DP > 1
	groupTokens := c.Limits.MaxNumBatchedTokens * l.DP
	if drawn {
		if cm.routing, err = newRoutingModel(m, l, &c); err != nil {
			return nil, err
		}
	}
	first, last, between := spec.ModelOps(m, l)
	for s := 0; s < l.PP; s++ {
		st := stageModel{
			byTokens: make([]memoEntry, c.Limits.MaxNumBatchedTokens+1),
			bySeqs:   make([]memoEntry, c.Limits.MaxNumSeqs+1),
		}
		lo, hi := l.StageLayers(m, s)
		for i := lo; i < hi; i++ {
			moeLayer := false
			for _, o := range spec.LayerOps(m, l, i) {
				g := &st.tokens
				local := m.IsLocalAttentionLayer(i)
				switch o.Name {
				case spec.OpAttnPrefill:
					g = &st.prefill
					if local {
						g = &st.prefillLocal
					}
				case spec.OpAttnDecode:
					g = &st.decode
					if local {
						g = &st.decodeLocal
					}
				case spec.OpMoEGroupedGEMM:
					if drawn || lockstep {
						g, moeLayer = &st.routed, drawn
					}
				case spec.OpEPDispatch, spec.OpEPCombine:
					if lockstep {
						g = &st.routed
					}
				}
				cm.addOp(g, o, c.Predictors)
			}
			if moeLayer {
				st.routers = append(st.routers, cm.routing.routerOf(i))
			}
		}
		if s == 0 {
			for _, o := range first {
				cm.addOp(&st.tokens, o, c.Predictors)
			}
			for _, o := range c.ExtraFirstOps {
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
		for _, g := range []*opGroup{&st.tokens, &st.seqs, &st.prefill, &st.decode, &st.prefillLocal, &st.decodeLocal, &st.routed} {
			if len(g.ops) > 64 {
				return nil, fmt.Errorf("simulate: stage %d has %d distinct ops, more than the 64 the cost cache tracks", s, len(g.ops))
			}
			g.extrap = make([]int64, len(g.ops))
		}
		if len(st.routed.ops) > 0 {
			st.routedByTokens = make([]memoEntry, groupTokens+1)
			if cm.routing != nil {
				if err := cm.routing.bind(cm, &st.routed); err != nil {
					return nil, err
				}
			}
		}
		cm.stages = append(cm.stages, st)
	}
	cm.gating = cm.gatingChoices(c.Predictors)
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
	if o.Name == spec.OpEPDispatch || o.Name == spec.OpEPCombine {
		o.Backend = cm.exchange.Backend
	}
	for i := range g.ops {
		if g.ops[i].op == o {
			g.ops[i].count++
			return
		}
	}
	p := pricedOp{op: o, key: opKey(&o, cm.layout, cm.measurement), comp: opComponent(&o), count: 1}
	if ops, ok := preds.(opPredictorSet); ok {
		if pr, ok := ops.OpPredictor(&o); ok {
			p.pred = pr
			p.extrap, _ = pr.(extrapolationCounter)
			p.pred = withQKNorm(pr, &o, cm.roof, cm.measurement)
		}
	} else if preds != nil {
		if pr, k, ok := resolvePredictor(preds, p.key); ok {
			p.pred = pr
			p.extrap, _ = pr.(extrapolationCounter)
			if k != p.key {
				cm.matched[p.key.String()] = k.String()
			}
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
	if p.op.Name == spec.OpAttnPrefill && len(x) > roofline.PrefillSeqsFeature {
		x = x[:roofline.PrefillSeqsFeature] // fitted predictors read (context, chunk) only
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
		// The exchange of a lockstep step of t tokens over every DP rank:
		// all-to-all backends receive the routed copies, evenly spread
		// (routing draws replace this), the others gather every token.
		x[0] = cm.exchangeBytes(p.op.Name, t, t*m.TopK/max(cm.layout.EP, 1))
	case spec.OpMoEGroupedGEMM:
		// Even expert load: routed tokens split over EP ranks, each local
		// expert taking its share. Routing draws scale it (moe_tables.go).
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
func (cm *OpCostModel) attention(g *opGroup, a, b, seqs float64, c *StepCost) {
	x := cm.attentionFeatures(a, b, seqs)
	for i := range g.ops {
		p := &g.ops[i]
		ms, ex := cm.price(p, x)
		c.Ms[p.comp] += ms * p.count
		if ex {
			g.extrap[i]++
		}
	}
	c.Kernels += g.kernels
}

// attentionFeatures returns the features of an attention op: (a, b), and
// for a prefill the sequences its equivalent chunk stands for
// (roofline.PrefillSeqsFeature; seqs 0: a decode).
func (cm *OpCostModel) attentionFeatures(a, b, seqs float64) []float64 {
	cm.x[0], cm.x[1] = a, b
	if seqs > 0 {
		cm.x[roofline.PrefillSeqsFeature] = seqs
		return cm.x[:roofline.PrefillSeqsFeature+1]
	}
	return cm.x[:2]
}

// StageCost implements CostModel. Attention features come from spec's batch
// reductions: prefill chunks as one equivalent (context, chunk) sequence,
// decodes as (batch size, mean context). A batch replayed as a CUDA graph
// runs padded to its capture size: the token-priced ops (and, for a full
// graph, the LM head) are priced at the padded size.
func (cm *OpCostModel) StageCost(b *BatchShape, stage int, c *StepCost) {
	cm.stageCost(b, stage, b.Tokens, len(b.PrefillChunks) == 0, nil, c)
}

// stageCost prices batch b on stage as StageCost does, with its
// token-priced ops run at tokens (b.Tokens, or more when data-parallel
// ranks pad to the largest batch), a full CUDA graph only when graphable
// (no prefill: on any rank of a lockstep step, which agree on one mode),
// and the routed MoE ops taken from routed when it is not nil (the
// lockstep step's, shared by every rank) or priced for b.Tokens.
func (cm *OpCostModel) stageCost(b *BatchShape, stage, tokens int, graphable bool, routed *StepCost, c *StepCost) {
	st := &cm.stages[stage]
	*c = StepCost{}
	st.steps++
	seqs := b.Seqs
	if b.Logits > 0 {
		seqs = b.Logits
	}
	mode := runresult.ExecEager
	switch cm.exec {
	case runresult.ExecCUDAGraph:
		if graphable {
			// A decode batch is its sequences; a lockstep rank runs the
			// padded count (tokens >= seqs).
			if p := cm.capture.pad(max(seqs, tokens)); p > 0 {
				mode, tokens, seqs = runresult.ExecCUDAGraph, p, p
			}
		}
	case runresult.ExecPiecewise:
		if p := cm.capture.pad(tokens); p > 0 {
			mode, tokens = runresult.ExecPiecewise, p
		}
	case runresult.ExecFullAndPiecewise:
		if graphable {
			if p := cm.capture.pad(max(seqs, tokens)); p > 0 {
				mode, tokens, seqs = runresult.ExecCUDAGraph, p, p
				break
			}
		}
		if p := cm.capture.pad(tokens); p > 0 {
			mode, tokens = runresult.ExecPiecewise, p
		}
	}
	e := cm.memo(&st.tokens, st.byTokens, tokens)
	copy(c.Ms[:NumDeviceComponents], e.ms[:])
	if e.extrap != 0 {
		st.tokens.countExtrap(e.extrap)
	}
	c.Kernels = st.tokens.kernels
	var lmHeadMs float64
	if len(st.seqs.ops) > 0 && seqs > 0 {
		e := cm.memo(&st.seqs, st.bySeqs, seqs)
		for i := range e.ms {
			c.Ms[i] += e.ms[i]
			lmHeadMs += e.ms[i]
		}
		if e.extrap != 0 {
			st.seqs.countExtrap(e.extrap)
		}
		c.Kernels += st.seqs.kernels
	}
	switch {
	case routed != nil:
		c.Ms[CompMoE] += routed.Ms[CompMoE]
		c.Ms[CompEPComm] += routed.Ms[CompEPComm]
		c.Kernels += routed.Kernels
	case len(st.routed.ops) > 0:
		// Padding tokens are left out of the routing: they are identical
		// (token 0 at position 0), so all go to the same top-k experts, a
		// small addition next to the real tokens' spread.
		cm.routedCost(st, b.Tokens, c)
	}
	attnBase := c.Ms[CompAttention]
	chunks, contexts, decodes := b.attentionSplit(&cm.split)
	if len(chunks) > 0 {
		st.prefillSteps++
		kv, chunk := spec.PrefillEquivalent(chunks, contexts)
		cm.attention(&st.prefill, kv, chunk, float64(len(chunks)), c)
	}
	if len(decodes) > 0 {
		st.decodeSteps++
		n, kv := spec.DecodeEquivalent(decodes)
		st.decodeSeqSum += n
		st.decodeCtxSum += kv
		cm.attention(&st.decode, n, kv, 0, c)
	}
	if len(b.DecodeQueries) > 0 {
		cm.verifyAttentionFloor(st, b, attnBase, c)
	}
	if w := cm.model.AttentionWindow; w > 0 {
		cm.localAttention(st, chunks, contexts, decodes, w, c)
	}
	// The CPU timeline beside the GPU's (issue.go): the same for KERNEL_ONLY
	// and CUDA_EVENT times and the roofline (what each already holds is
	// spelled out on issueModel).
	c.Ms[CompLaunch], c.ForwardMs = cm.issue.forward(stage, mode, len(b.PrefillChunks) > 0, len(b.DecodeContexts) > 0, c.DeviceMs(), lmHeadMs)
	c.Graph = mode != runresult.ExecEager
	c.Ms[CompHostBefore], c.Ms[CompHostAfter], c.CoreBeforeMs, c.CoreAfterMs = cm.host.stage(stage, len(cm.stages), b)
}

// ExecutionMode is the run's resolved execution mode.
func (cm *OpCostModel) ExecutionMode() string { return cm.exec }

// Measurement is the measurement type of every op time of the run.
func (cm *OpCostModel) Measurement() string { return cm.measurement }

// OpSources lists the operators of every stage by where their times come
// from: a profiled predictor or the roofline (ops the predictors lack).
func (cm *OpCostModel) OpSources() (predicted, roofline []string) {
	for _, st := range cm.stages {
		for _, g := range []*opGroup{&st.tokens, &st.seqs, &st.prefill, &st.decode, &st.prefillLocal, &st.decodeLocal} {
			for _, p := range g.ops {
				if g == &st.prefillLocal && len(st.prefill.ops) > 0 || g == &st.decodeLocal && len(st.decode.ops) > 0 {
					continue // the same operators as the global layers'
				}
				if p.pred != nil {
					predicted = append(predicted, p.op.Name)
				} else {
					roofline = append(roofline, p.op.Name)
				}
			}
		}
	}
	return predicted, roofline
}

// localAttention prices the attention of local layers (sliding window,
// chunked local attention): each sequence attends to at most w cached
// tokens.
func (cm *OpCostModel) localAttention(st *stageModel, chunks, contexts, decodes []int, w int, c *StepCost) {
	if len(chunks) > 0 && len(st.prefillLocal.ops) > 0 {
		var sq, ck float64
		for i, n := range chunks {
			sq += float64(n) * float64(n)
			ck += float64(n) * float64(min(contexts[i], w))
		}
		if sq > 0 {
			chunk := math.Sqrt(sq)
			cm.attention(&st.prefillLocal, ck/chunk, chunk, float64(len(chunks)), c)
		}
	}
	if len(decodes) > 0 && len(st.decodeLocal.ops) > 0 {
		var sum float64
		for _, k := range decodes {
			sum += float64(min(k, w))
		}
		n := float64(len(decodes))
		cm.attention(&st.decodeLocal, n, sum/n, 0, c)
	}
}

// verifyAttentionFloor keeps a step with multi-token decodes (the verify
// pass of speculative decoding) from pricing its attention below the same
// batch with one query token per decode: a chunk of k+1 query tokens
// reads its whole cached context as a decode does, and the prefill path's
// reduction of many short chunks on long contexts (spec.PrefillEquivalent)
// can price it below that.
func (cm *OpCostModel) verifyAttentionFloor(st *stageModel, b *BatchShape, base float64, c *StepCost) {
	var floor float64
	price := func(g *opGroup, a, bb, seqs float64) {
		x := cm.attentionFeatures(a, bb, seqs)
		for i := range g.ops {
			p := &g.ops[i]
			if p.comp == CompAttention {
				ms, _ := cm.price(p, x)
				floor += ms * p.count
			}
		}
	}
	if len(b.PrefillChunks) > 0 {
		kv, chunk := spec.PrefillEquivalent(b.PrefillChunks, b.PrefillContexts)
		price(&st.prefill, kv, chunk, float64(len(b.PrefillChunks)))
	}
	n, kv := spec.DecodeEquivalent(b.DecodeContexts)
	price(&st.decode, n, kv, 0)
	c.Ms[CompAttention] = max(c.Ms[CompAttention], base+floor)
}
