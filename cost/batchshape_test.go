package cost

import (
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// A decode of one query token a sequence, said explicitly
// (DecodeQueries all 1), costs what a plain decode costs; a verify pass
// of speculative decoding (k+1 query tokens a sequence) attends as
// chunks of those tokens on each sequence's context, runs every
// token-wise op over all its tokens and counts them as decode tokens in
// the host's work.
func TestMultiTokenDecode(t *testing.T) {
	for _, tc := range []struct{ model, device string }{{"llama-3.1-8b", "h100"}, {"qwen3-30b-a3b", "h100"}} {
		m, d := lookup(t, tc.model, tc.device)
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: spec.Layout{TP: 1}, Device: d, Limits: testLimits,
			MoE: runresult.MoEConfig{Routing: runresult.RoutingEven}, ExecutionMode: runresult.ExecEager})
		if err != nil {
			t.Fatal(err)
		}
		ctxs := []int{900, 1000, 1100, 1200}
		var plain, ones, verify, chunks StepCost
		p := decodeShape(ctxs...)
		cm.StageCost(&p, 0, &plain)
		o := decodeShape(ctxs...)
		o.DecodeQueries = []int{1, 1, 1, 1}
		cm.StageCost(&o, 0, &ones)
		if plain != ones {
			t.Errorf("%s: one query token a sequence, said: %+v; a plain decode: %+v", tc.model, ones, plain)
		}
		// Verify passes of 4 tokens (3 draft tokens): attention as chunks
		// of 4 on each context, beside the same tokens as prefill chunks.
		v := BatchShape{Tokens: 16, Seqs: 4, DecodeContexts: ctxs, DecodeQueries: []int{4, 4, 4, 4}}
		cm.StageCost(&v, 0, &verify)
		c := BatchShape{Tokens: 16, Seqs: 4, PrefillChunks: []int{4, 4, 4, 4}, PrefillContexts: ctxs}
		cm.StageCost(&c, 0, &chunks)
		if !near(verify.Ms[CompAttention], chunks.Ms[CompAttention]) || !near(verify.Ms[CompLinear], chunks.Ms[CompLinear]) {
			t.Errorf("%s: verify pass attention %g, linear %g ms; the same tokens as chunks %g, %g ms",
				tc.model, verify.Ms[CompAttention], verify.Ms[CompLinear], chunks.Ms[CompAttention], chunks.Ms[CompLinear])
		}
		if verify.Ms[CompLinear] <= plain.Ms[CompLinear] || verify.Ms[CompAttention] <= plain.Ms[CompAttention] {
			t.Errorf("%s: a verify pass of 16 tokens costs no more than a 4-token decode: %+v vs %+v", tc.model, verify.Ms, plain.Ms)
		}
		if v.DecodeTokens() != 16 || p.DecodeTokens() != 4 {
			t.Errorf("decode tokens %d and %d, want 16 and 4", v.DecodeTokens(), p.DecodeTokens())
		}
	}
}
