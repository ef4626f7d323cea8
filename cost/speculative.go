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
	if stage == len(m.stages)-1 {
		m.addDrafter(b, c)
	}
}

// LockstepCost implements simulate's LockstepCostModel: the target's
// lockstep step, then each rank's drafter on its own batch (a drafter's
// MoE layer is priced for the rank's tokens alone, not the group's).
func (m *SpecCostModel) LockstepCost(b []*BatchShape, c []StepCost) {
	m.OpCostModel.LockstepCost(b, c)
	for r := range b {
		m.addDrafter(b[r], &c[r])
	}
}

// addDrafter adds the drafter's work for batch b to c.
func (m *SpecCostModel) addDrafter(b *BatchShape, c *StepCost) {
	n := b.Seqs
	if n == 0 {
		return
	}
	if m.draft == nil {
		c.Ms[CompHostAfter] += float64(n) * NgramHostUsPerRequest / 1e3
		return
	}
	fwd := c.GPUMs()
	// Pass 1: every token the target ran, logits at each request's last.
	p := &m.pass
	p.Reset()
	p.Tokens, p.Seqs = b.Tokens, n
	p.PrefillChunks = append(p.PrefillChunks, b.PrefillChunks...)
	p.PrefillContexts = append(p.PrefillContexts, b.PrefillContexts...)
	p.DecodeContexts = append(p.DecodeContexts, b.DecodeContexts...)
	p.DecodeQueries = append(p.DecodeQueries, b.DecodeQueries...)
	fwd += m.addPass(p, c)
	// Passes 2..K: one token per request, each on the context the last
	// pass left.
	for j := 1; j < m.k; j++ {
		p.Reset()
		p.Tokens, p.Seqs = n, n
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
		fwd += m.addPass(p, c)
	}
	c.ForwardMs = fwd
}

// addPass adds one drafter pass's device and issue time to c and returns
// its forward time.
func (m *SpecCostModel) addPass(p *BatchShape, c *StepCost) float64 {
	d := &m.dc
	m.draft.StageCost(p, 0, d)
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
