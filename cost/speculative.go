package cost

import (
	"fmt"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// NgramHostUsPerRequest is the host time of vLLM's n-gram proposer per
// request and step, microseconds: a guess scaled from vLLM PR #13365
// (2025-02-17, "Optimize N-gram matching with Numba"): over a 5,000-request
// ShareGPT benchmark the numba matching cost 1.9 s in all, about 2.5% of
// the run; spread over the run's request-steps (about 200 output tokens a
// request, 1.3 tokens a step) that is 2-3 us each. It grows with context
// length in vLLM (a KMP scan of the request's tokens), which ftk ignores.
const NgramHostUsPerRequest = 3.0

// SpecCostModel prices the steps of an engine that runs speculative
// decoding: the target's pass over the scheduled batch (verifying the
// draft tokens of each decoding request: k+1 query tokens with logits at
// each, BatchShape.DecodeQueries and Logits) and then, on the last
// pipeline stage, the drafter's work for the next step (spec.Drafter):
// EAGLE, EAGLE-3 and MTP heads and draft models run one pass over every
// token of the batch and K-1 passes of one token per request, priced as
// forward passes of the drafter's own operators (draft), in the drafter's
// execution mode; the n-gram proposer is host time. The drafter's passes
// follow the target's on the GPU: its device time adds to the step's, its
// issue time to the launch timeline.
type SpecCostModel struct {
	*OpCostModel
	draft  *OpCostModel // nil for ngram
	k      int
	method string
	pass   BatchShape
	dc     StepCost
	// Per-rank scratch of a lockstep step's drafter passes.
	ranks     []BatchShape
	rankPtrs  []*BatchShape
	rankCosts []StepCost
	fwd       []float64
}

// DrafterExecutionMode is the execution mode of the drafter's passes for a
// target running in mode: vLLM's EAGLE proposer (used for EAGLE, EAGLE-3,
// MTP and draft models) captures piecewise CUDA graphs only, and runs
// eagerly when the target's graph mode has no piecewise part
// (vllm/v1/spec_decode/eagle.py, EagleProposer.__init__: use_cuda_graph =
// cudagraph_mode.has_mode(PIECEWISE)).
func DrafterExecutionMode(mode string) string {
	switch mode {
	case runresult.ExecPiecewise, runresult.ExecFullAndPiecewise:
		return runresult.ExecPiecewise
	}
	return runresult.ExecEager
}

// NewSpecCostModel wraps target, built from c, with the drafter d of s.
// The drafter's ops take c's predictors when they have the target's
// shapes (EAGLE and MTP heads: the same layer, embedding and LM head) or
// when the predictors price any shape (kernel tables); otherwise (a draft
// model, an EAGLE-3 head's own LM head) the roofline prices them.
func NewSpecCostModel(target *OpCostModel, c OpCostConfig, s *spec.Speculative, d spec.Drafter) (*SpecCostModel, error) {
	m := &SpecCostModel{OpCostModel: target, k: s.NumSpeculativeTokens, method: s.Method}
	if d.Model == nil {
		return m, nil
	}
	dc := c
	dc.Model, dc.Layout = d.Model, d.Layout(c.Layout)
	dc.ExecutionMode = DrafterExecutionMode(target.exec)
	dc.BundleName = c.BundleName + " (drafter)"
	if _, shapes := c.Predictors.(opPredictorSet); !shapes {
		switch {
		case s.Method == spec.SpecDraftModel:
			dc.Predictors = nil
		case s.Method == spec.SpecEagle3 && c.Predictors != nil:
			dc.Predictors = withoutOps{c.Predictors, spec.OpLMHead}
		}
	}
	if op, ok := d.FusionOp(); ok {
		dc.ExtraFirstOps = []spec.Op{op}
	}
	dc.HostPredictors = nil
	var err error
	if m.draft, err = NewOpCostModel(dc); err != nil {
		return nil, fmt.Errorf("speculative decoding %s: drafter %s: %w", s.Method, d.Model.Name, err)
	}
	return m, nil
}

// StageCost implements simulate's CostModel.
func (m *SpecCostModel) StageCost(b *BatchShape, stage int, c *StepCost) {
	m.OpCostModel.StageCost(b, stage, c)
	if stage != len(m.stages)-1 || b.Seqs == 0 {
		return
	}
	if m.draft == nil {
		c.Ms[CompHostAfter] += float64(b.Seqs) * NgramHostUsPerRequest / 1e3
		return
	}
	fwd := c.GPUMs()
	for j := range m.k {
		m.passShape(b, j, &m.pass)
		m.draft.StageCost(&m.pass, 0, &m.dc)
		fwd += addPass(&m.dc, c)
	}
	c.ForwardMs = fwd
}

// LockstepCost implements simulate's LockstepCostModel: the target's
// lockstep step, then the drafter's passes, each a lockstep step of every
// rank's pass (the drafter's MoE layers, as the MTP module of an MoE
// model has, route the tokens of every rank together, as the target's).
func (m *SpecCostModel) LockstepCost(b []*BatchShape, c []StepCost) {
	m.OpCostModel.LockstepCost(b, c)
	if m.draft == nil {
		for r := range b {
			c[r].Ms[CompHostAfter] += float64(b[r].Seqs) * NgramHostUsPerRequest / 1e3
		}
		return
	}
	if len(m.ranks) != len(b) {
		m.ranks = make([]BatchShape, len(b))
		m.rankPtrs = make([]*BatchShape, len(b))
		m.rankCosts = make([]StepCost, len(b))
		m.fwd = make([]float64, len(b))
		for r := range m.ranks {
			m.rankPtrs[r] = &m.ranks[r]
		}
	}
	for r := range b {
		m.fwd[r] = c[r].GPUMs()
	}
	for j := range m.k {
		for r := range b {
			m.passShape(b[r], j, &m.ranks[r])
		}
		m.draft.LockstepCost(m.rankPtrs, m.rankCosts)
		for r := range b {
			m.fwd[r] += addPass(&m.rankCosts[r], &c[r])
		}
	}
	for r := range b {
		c[r].ForwardMs = m.fwd[r]
	}
}

// passShape fills p with the drafter's pass j (from 0) for batch b: the
// first runs every token the target ran, logits at each request's last;
// each later one runs one token per request on the context the pass
// before left.
func (m *SpecCostModel) passShape(b *BatchShape, j int, p *BatchShape) {
	p.Reset()
	if j == 0 {
		p.Tokens, p.Seqs = b.Tokens, b.Seqs
		p.PrefillChunks = append(p.PrefillChunks, b.PrefillChunks...)
		p.PrefillContexts = append(p.PrefillContexts, b.PrefillContexts...)
		p.DecodeContexts = append(p.DecodeContexts, b.DecodeContexts...)
		p.DecodeQueries = append(p.DecodeQueries, b.DecodeQueries...)
		return
	}
	p.Tokens, p.Seqs = b.Seqs, b.Seqs
	for i, ctx := range b.PrefillContexts {
		p.DecodeContexts = append(p.DecodeContexts, ctx+b.PrefillChunks[i]+j-1)
	}
	for i, ctx := range b.DecodeContexts {
		q := 1
		if len(b.DecodeQueries) > 0 {
			q = b.DecodeQueries[i]
		}
		p.DecodeContexts = append(p.DecodeContexts, ctx+q+j-1)
	}
}

// addPass adds one drafter pass's device and issue time d to c and returns
// its forward time (its own host parts are not the step's: see
// docs/speculative.md).
func addPass(d, c *StepCost) float64 {
	for i := range NumDeviceComponents {
		c.Ms[i] += d.Ms[i]
	}
	c.Ms[CompLaunch] += d.Ms[CompLaunch]
	c.Kernels += d.Kernels
	return d.GPUMs()
}

// DrafterReport is the drafter's cost model report (nil for ngram).
func (m *SpecCostModel) DrafterReport() *runresult.CostModelReport {
	if m.draft == nil {
		return nil
	}
	r := m.draft.Report()
	return &r
}

// withoutOps hides the predictors of some ops (the roofline prices them).
type withoutOps struct {
	PredictorSet
	op string
}

func (w withoutOps) Predictor(k spec.OpKey) (OpPredictor, bool) {
	if k.Op == w.op {
		return nil, false
	}
	return w.PredictorSet.Predictor(k)
}
