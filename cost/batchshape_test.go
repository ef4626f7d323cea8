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

// Prefill chunks of one token over long cached prefixes (a prefix-cache
// hit's last token, a resumed request) are priced about as the decode of
// the same contexts on Hopper, whose FA3 runs both: the engine passes the
// number of chunks with their equivalent sequence, so n chunks are priced
// as n sequences that each read their own prefix, and FA3 splits the keys
// of a grid too small for the SMs (roofline/fa3.go) instead of walking a
// 100,000-token prefix with one CTA a KV head.
func TestShortPrefillOverLongPrefix(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	limits := testLimits
	limits.MaxModelLen = 131072
	cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: spec.Layout{TP: 1}, Device: d, Limits: limits,
		ExecutionMode: runresult.ExecEager})
	if err != nil {
		t.Fatal(err)
	}
	for _, ctxs := range [][]int{{100000}, {100000, 100000, 100000, 100000, 100000, 100000, 100000, 100000}, {30000, 60000, 90000}} {
		var dec, pre StepCost
		dshape := decodeShape(ctxs...)
		cm.StageCost(&dshape, 0, &dec)
		ones := make([]int, len(ctxs))
		for i := range ones {
			ones[i] = 1
		}
		p := BatchShape{Tokens: len(ctxs), Seqs: len(ctxs), PrefillChunks: ones, PrefillContexts: ctxs}
		cm.StageCost(&p, 0, &pre)
		r := pre.Ms[CompAttention] / dec.Ms[CompAttention]
		t.Logf("contexts %v: prefill attention %.3f ms, decode %.3f ms (x%.2f)", ctxs, pre.Ms[CompAttention], dec.Ms[CompAttention], r)
		if r < 0.8 || r > 1.5 {
			t.Errorf("contexts %v: one-token prefills priced %.3f ms of attention, x%.2f the decode of the same contexts (%.3f ms); want x0.8-1.5",
				ctxs, pre.Ms[CompAttention], r, dec.Ms[CompAttention])
		}
	}
}
