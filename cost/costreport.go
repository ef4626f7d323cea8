package cost

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Report describes the model and the fallbacks and extrapolations so far.
func (cm *OpCostModel) Report() runresult.CostModelReport {
	r := runresult.CostModelReport{Label: cm.label, Profiles: cm.profiles, Measurement: cm.measurement, ExecutionMode: cm.exec,
		IssueNote: cm.issueNote, IssueCosts: cm.issue.costs, HostSource: cm.host.source, HostNote: cm.host.note, GatingContexts: cm.gating}
	if cm.host.source == HostFromCalibration {
		r.HostMsPerStep = cm.host.calibratedMs
	}
	if cm.exec != runresult.ExecEager {
		r.MaxCaptureSize = cm.capture.largest()
	}
	st := &cm.issue.stages[0]
	eagerMs := float64(st.layers)*(st.always+st.decode) + st.prologue + st.epilogue
	switch cm.exec {
	case runresult.ExecCUDAGraph:
		r.LaunchNote = fmt.Sprintf("decode-only batches of up to %d sequences: one CUDA graph replay (%.0f us), batch padded to its capture size; other batches issued eagerly (%.2f ms per decode step on stage 0)",
			cm.capture.largest(), cm.issue.costs.GraphLaunchUs, eagerMs)
	case runresult.ExecPiecewise:
		r.LaunchNote = fmt.Sprintf("batches of up to %d tokens: one replay per piece (layers + 1, %.0f us each) and attention issued eagerly, tokens padded to the capture size; larger batches eager (%.2f ms per decode step on stage 0)",
			cm.capture.largest(), cm.issue.costs.PieceLaunchUs, eagerMs)
	case runresult.ExecFullAndPiecewise:
		r.LaunchNote = fmt.Sprintf("decode-only batches of up to %d sequences: one full CUDA graph replay (%.0f us); other batches of up to %d tokens: one replay per piece (layers + 1, %.0f us each), attention issued eagerly; larger batches eager (%.2f ms per decode step on stage 0)",
			cm.capture.largest(), cm.issue.costs.GraphLaunchUs, cm.capture.largest(), cm.issue.costs.PieceLaunchUs, eagerMs)
	default:
		r.LaunchNote = fmt.Sprintf("eager: the host issues every op (%.2f ms per decode step on stage 0) while the GPU runs them; a step is host-bound when issuing outlasts the GPU work", eagerMs)
	}
	if cm.measurement == spec.CUDAEvent {
		r.LaunchNote += "; CUDA_EVENT op times hold their own launch gaps, which overlap the issue timeline rather than add to it"
	}
	if cm.model.IsMoE() {
		r.MoE = cm.moeReport()
	}
	r.OpTable = cm.opTable()
	for a, u := range cm.matched {
		r.MatchedKeys = append(r.MatchedKeys, runresult.KeyMatch{Asked: a, Used: u})
	}
	sort.Slice(r.MatchedKeys, func(i, j int) bool { return r.MatchedKeys[i].Asked < r.MatchedKeys[j].Asked })
	fallback, extrap := map[string]int64{}, map[string]int64{}
	for si := range cm.stages {
		st := &cm.stages[si]
		for _, gs := range []struct {
			g     *opGroup
			steps int64
		}{{&st.tokens, st.steps}, {&st.seqs, st.steps}, {&st.prefill, st.prefillSteps}, {&st.decode, st.decodeSteps},
			{&st.prefillLocal, st.prefillSteps}, {&st.decodeLocal, st.decodeSteps}, {&st.routed, st.steps}} {
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
	for i, n := range cm.host.extrapCount {
		if n > 0 {
			extrap[cm.host.keys[i].String()] += n
		}
	}
	r.RooflineFallbacks, r.Extrapolated = sortedCounts(fallback), sortedCounts(extrap)
	return r
}

func (cm *OpCostModel) moeReport() *runresult.MoEReport {
	return &runresult.MoEReport{Routing: cm.routingName(), Skew: cm.routingSkew(), Histogram: cm.routingHistogram(),
		All2AllBackend: cm.routingBackend(), Method: cm.routingMethod(), RoutingTables: cm.routingTables()}
}

// gatingChoices lists, for each MoE gating op, the context asked for and
// what answered it.
func (cm *OpCostModel) gatingChoices(preds PredictorSet) []runresult.GatingChoice {
	if !cm.model.IsMoE() {
		return nil
	}
	var out []runresult.GatingChoice
	for _, op := range []string{spec.OpMoEGatingLinear, spec.OpMoERoutingTopK} {
		g := runresult.GatingChoice{Op: op, Context: spec.GatingPrefillHot, Source: "roofline"}
		k := spec.OpKey{Op: op, Measurement: cm.measurement, TP: cm.layout.TP, GatingContext: spec.GatingPrefillHot}
		if _, ok := preds.(opPredictorSet); ok {
			g.Source = "roofline (not in the kernel tables)"
			if cm.tablePriced(op) {
				g.Source = "kernel tables"
			}
		} else if preds != nil {
			if _, used, ok := resolvePredictor(preds, k); ok {
				g.Source = used.String()
			} else {
				var cold []string
				for _, have := range preds.Keys() {
					if have.Op == op && have.GatingContext == spec.GatingStandalone {
						cold = append(cold, have.String())
					}
				}
				sort.Strings(cold)
				g.Note = "the bundle has no prefill_hot predictor for this TP and measurement type"
				if len(cold) > 0 {
					g.Note += "; its " + spec.GatingStandalone + " predictors (" + strings.Join(cold, ", ") + ") time the op cold and alone and are not used in a forward pass"
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// tablePriced reports whether kernel tables price op on the first stage.
func (cm *OpCostModel) tablePriced(op string) bool {
	for _, p := range cm.stages[0].tokens.ops {
		if p.op.Name == op {
			return p.pred != nil
		}
	}
	return false
}

func sortedCounts(m map[string]int64) []runresult.OpCount {
	out := make([]runresult.OpCount, 0, len(m))
	for k, n := range m {
		out = append(out, runresult.OpCount{Op: k, Queries: n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Op < out[j].Op })
	if len(out) == 0 {
		return nil
	}
	return out
}
