package search

import (
	"fmt"
	"slices"

	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/spec"
)

// Space is the set of deployments a search enumerates.
type Space struct {
	Model *spec.Model
	Pools []Pool
	// TP, PP and EP restrict the parallel degrees (nil: every power of two
	// the pool allows; EP only for MoE models).
	TP, PP, EP []int
	// MaxNumSeqs and MaxNumBatchedTokens are the engine limits tried.
	MaxNumSeqs          []int
	MaxNumBatchedTokens []int
	// ExecutionModes are simulate's execution modes tried.
	ExecutionModes []string
	// Modes are runresult.ModeColocated and/or runresult.ModeDisaggregated.
	Modes []string
	// UseAll keeps only the deployments that use every GPU of their pool.
	UseAll bool `json:",omitempty"`
}

// Enumerate lists the space's candidates in a fixed order: per pool,
// co-located deployments then disaggregated ones, fewer GPUs per engine
// first. Whether the simulator accepts a candidate (memory, divisibility,
// what it models) is decided later, by the simulator.
func (s *Space) Enumerate() ([]Candidate, error) {
	if s.Model == nil || len(s.Pools) == 0 {
		return nil, fmt.Errorf("search space: no model or no GPUs")
	}
	if len(s.MaxNumSeqs) == 0 || len(s.MaxNumBatchedTokens) == 0 || len(s.ExecutionModes) == 0 || len(s.Modes) == 0 {
		return nil, fmt.Errorf("search space: give at least one max-num-seqs, max-num-batched-tokens, execution mode and serving mode")
	}
	for _, m := range s.Modes {
		if m != runresult.ModeColocated && m != runresult.ModeDisaggregated {
			return nil, fmt.Errorf("search space: unknown serving mode %q: use %s or %s", m, runresult.ModeColocated, runresult.ModeDisaggregated)
		}
	}
	var out []Candidate
	for _, p := range s.Pools {
		engines := s.engineLayouts(p.GPUs)
		limits := func(c Candidate) {
			for _, x := range s.ExecutionModes {
				for _, seqs := range s.MaxNumSeqs {
					for _, tok := range s.MaxNumBatchedTokens {
						// Limits vLLM refuses (spec.EngineLimits.Validate: a
						// budget below max_num_seqs) are no deployment.
						if (spec.EngineLimits{MaxNumBatchedTokens: tok, MaxNumSeqs: seqs, BlockSize: spec.DefaultBlockSize}).Validate() != nil {
							continue
						}
						c.MaxNumSeqs, c.MaxNumBatchedTokens, c.ExecutionMode = seqs, tok, x
						out = append(out, c)
					}
				}
			}
		}
		if slices.Contains(s.Modes, runresult.ModeColocated) {
			seen := map[spec.Layout]bool{}
			for _, l := range engines {
				for _, dp := range powersOfTwo(p.GPUs / l.GPUs()) {
					for _, v := range s.replicated(l, dp) {
						if !seen[v] && (!s.UseAll || v.GPUs() == p.GPUs) {
							seen[v] = true
							limits(Candidate{Device: p.Device, Mode: runresult.ModeColocated, Layout: v})
						}
					}
				}
			}
		}
		if slices.Contains(s.Modes, runresult.ModeDisaggregated) {
			for _, pre := range engines {
				for _, dec := range engines {
					if pre.PP > 1 || dec.PP > 1 { // instances scale out by count; PP stays co-located
						continue
					}
					for np := 1; np*pre.GPUs() < p.GPUs; np++ {
						for nd := 1; np*pre.GPUs()+nd*dec.GPUs() <= p.GPUs; nd++ {
							if s.UseAll && np*pre.GPUs()+nd*dec.GPUs() != p.GPUs {
								continue
							}
							limits(Candidate{Device: p.Device, Mode: runresult.ModeDisaggregated, Prefill: pre, Decode: dec, PrefillInstances: np, DecodeInstances: nd})
						}
					}
				}
			}
		}
	}
	if len(out) == 0 {
		if s.UseAll {
			return nil, fmt.Errorf("search space: no deployment of %s uses all the GPUs given with the degrees given: allow other --tp/--pp/--ep or drop --use-all", s.Model.Name)
		}
		return nil, fmt.Errorf("search space: no deployment of %s fits the GPUs and degrees given: allow more GPUs or other --tp/--pp/--ep", s.Model.Name)
	}
	return out, nil
}

// engineLayouts are the TP/PP/EP layouts of one engine (DP 1) that fit in
// gpus GPUs and that spec accepts for the model, fewest GPUs first.
func (s *Space) engineLayouts(gpus int) []spec.Layout {
	tps, pps, eps := s.TP, s.PP, s.EP
	if len(tps) == 0 {
		tps = powersOfTwo(gpus)
	}
	if len(pps) == 0 {
		pps = powersOfTwo(gpus)
	}
	var out []spec.Layout
	for _, tp := range tps {
		for _, pp := range pps {
			if tp*pp > gpus {
				continue
			}
			cands := eps
			if len(cands) == 0 {
				cands = []int{1}
				if s.Model.IsMoE() {
					cands = powersOfTwo(tp)
				}
			}
			for _, ep := range cands {
				l := spec.Layout{TP: tp, PP: pp, EP: ep, DP: 1}
				if l.Validate(s.Model) == nil {
					out = append(out, l)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b spec.Layout) int { return a.GPUs() - b.GPUs() })
	return out
}

// replicated is engine layout l at dp replicas, as the simulator runs it.
// A dense model's replicas are independent engines. A MoE model's replicas
// run in lockstep (simulate's checkLockstep), which vLLM allows only with
// expert parallelism over every rank (EP = TP x DP) or none (EP = 1), and
// without pipeline stages: other layouts are never generated, the
// simulator would refuse them.
func (s *Space) replicated(l spec.Layout, dp int) []spec.Layout {
	if dp == 1 || !s.Model.IsMoE() {
		return []spec.Layout{{TP: l.TP, PP: l.PP, EP: l.EP, DP: dp}}
	}
	if l.PP > 1 {
		return nil
	}
	var out []spec.Layout // the engine's own EP does not matter: Enumerate drops repeats
	if s.allowsEP(1) {
		out = append(out, spec.Layout{TP: l.TP, PP: 1, EP: 1, DP: dp})
	}
	if wide := (spec.Layout{TP: l.TP, PP: 1, EP: l.TP * dp, DP: dp}); s.allowsEP(wide.EP) && wide.Validate(s.Model) == nil {
		out = append(out, wide)
	}
	return out
}

// allowsEP reports whether --ep allows the degree (all do when not given).
func (s *Space) allowsEP(ep int) bool { return len(s.EP) == 0 || slices.Contains(s.EP, ep) }

// powersOfTwo returns 1, 2, 4, ... up to n.
func powersOfTwo(n int) []int {
	var out []int
	for v := 1; v <= n; v *= 2 {
		out = append(out, v)
	}
	return out
}
