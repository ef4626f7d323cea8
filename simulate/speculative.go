package simulate

import (
	"fmt"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// specDecode is one engine's speculative decoding, as vLLM V1's scheduler
// runs it (vllm/v1/core/sched/scheduler.py):
//
//   - a running request schedules its num_tokens_with_spec less its
//     computed tokens: the last sampled token and the K draft tokens the
//     drafter proposed for it after its previous step, all counted against
//     the token budget (a budget that runs out truncates the drafts), and
//     never past max_model_len - 1 (Scheduler.schedule);
//   - KV slots are allocated for the scheduled tokens plus
//     num_lookahead_tokens (K for EAGLE, MTP and draft models, whose draft
//     passes write KV; 0 for n-gram; 0 for a waiting request that has
//     computed nothing yet), capped at max_model_len
//     (kv_cache_manager.py, allocate_slots); only the tokens that are the
//     request's own (not drafts) fill blocks the prefix cache keeps
//     (cache_blocks: num_tokens_to_cache = min(computed + new, num_tokens));
//   - after the step the rejection sampler accepts a prefix of the drafts:
//     the request gains 1 + accepted tokens (the accepted drafts and the
//     target's bonus or correcting token, cut at max_tokens), and its
//     computed tokens fall back by the rejected drafts
//     (Scheduler.update_from_output: num_computed_tokens -= num_rejected);
//   - the drafter then proposes K new drafts for every request that
//     finished its prompt this step or verified (gpu_model_runner.py,
//     propose_draft_token_ids); a preempted request loses its drafts
//     (_preempt_request).
//
// Acceptance is drawn per request and verify step from the conditional
// per-position rates (spec.ConditionalAcceptance): position i is accepted
// with probability a_i / a_{i-1} once every position before it was, so the
// per-position rates vLLM reports come out as a. The draws come from a
// counter-based generator keyed by the seed, the request id and the
// request's verify step, so a request's acceptance does not depend on how
// it was batched (the same requests accept the same drafts under any
// load, layout or execution mode).
type specDecode struct {
	k, lookahead int32
	cond         []float64
	seed         uint64

	drafts, draftTokens, accepted int64
	perPos                        []int64
}

func newSpecDecode(s *spec.Speculative, seed uint64) *specDecode {
	if !s.Enabled() {
		return nil
	}
	k := s.NumSpeculativeTokens
	return &specDecode{k: int32(k), lookahead: int32(s.LookaheadTokens()), cond: spec.ConditionalAcceptance(s.Acceptance, k),
		seed: seed ^ specSeedDomain, perPos: make([]int64, k)}
}

// specSeedDomain separates the acceptance draws from the run's other uses
// of its seed.
const specSeedDomain = 0x2545f4914f6cdd1d

// accept draws how many of the drafts draft tokens of r's verify step the
// rejection sampler accepts, counts it as vLLM's SpecDecodingStats does,
// and returns it.
func (d *specDecode) accept(r *reqState, drafts int32) int32 {
	r.verifies++
	x := d.seed ^ uint64(r.id)*0x9e3779b97f4a7c15 ^ uint64(r.verifies)*0xc2b2ae3d27d4eb4f
	var a int32
	for a < drafts {
		x += 0x9e3779b97f4a7c15
		if u := float64(mix64(x)>>11) / (1 << 53); u >= d.cond[a] {
			break
		}
		a++
	}
	d.drafts++
	d.draftTokens += int64(drafts)
	d.accepted += int64(a)
	for i := range a {
		d.perPos[i]++
	}
	return a
}

// addTo adds the engine's counts to the run's report.
func (d *specDecode) addTo(r *runresult.SpeculativeReport) {
	if d != nil {
		r.Add(d.drafts, d.draftTokens, d.accepted, d.perPos)
	}
}

// specReport is the run's speculative decoding report before any step:
// what it draws from and what its drafter is (role: the first role's
// layout and cost settings).
func (r *Resolved) specReport(sc *cost.SpecCostModel, ro *role) *runresult.SpeculativeReport {
	s := r.spec
	rep := &runresult.SpeculativeReport{Method: s.Method, NumSpeculativeTokens: s.NumSpeculativeTokens,
		Acceptance: s.Acceptance, AcceptanceRecord: s.AcceptanceRecord, AcceptanceSource: "given (--speculative-acceptance or the config's acceptance)",
		AcceptedPerPosition: make([]int64, s.NumSpeculativeTokens)}
	if s.AcceptanceRecord != "" {
		if recs, err := spec.AcceptanceRecords(); err == nil {
			for _, rec := range recs {
				if rec.Name == s.AcceptanceRecord {
					rep.AcceptanceSource = rec.Source
				}
			}
		}
	}
	d := &r.drafter
	rep.DrafterWeightBytes, rep.DrafterKVBytesPerToken = d.WeightBytesPerGPU(ro.layout), d.KVBytesPerToken(ro.layout)
	if d.Model == nil {
		rep.Drafter = fmt.Sprintf("n-gram prompt lookup on the host (%g us per request and step, a guess: cost/speculative.go)", cost.NgramHostUsPerRequest)
		return rep
	}
	rep.DrafterExecutionMode = cost.DrafterExecutionMode(sc.ExecutionMode())
	what := fmt.Sprintf("%s (%d layer(s), LM head of %d tokens", d.Model.Name, d.Model.NumLayers, d.Model.VocabSize)
	if d.FusionWidth > 0 {
		what += fmt.Sprintf(", fusion GEMM %dh to h", d.FusionWidth)
	}
	rep.Drafter = what + fmt.Sprintf("): 1 pass over the step's tokens and %d of one token per request each step; %s", s.NumSpeculativeTokens-1, sc.DrafterReport().Label)
	return rep
}
