package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/spec"
)

// recordingClients keeps every request the clients sent.
type recordingClients struct {
	*datasets.Clients
	sent map[int]spec.Request
}

func (r *recordingClients) Next() (spec.Request, bool) {
	q, ok := r.Clients.Next()
	if ok {
		r.sent[q.ID] = q
	}
	return q, ok
}

// Multi-turn sessions from 6 closed-loop clients: at most 6 requests in
// flight, and every request finds in the cache exactly what the analytic
// model says: turn 1 the system prompt's full blocks unless it is the
// prompt's first use; turn k the full blocks of turn k-1's prompt and all
// but its last output token (the last is sampled, never fed back), capped
// at the prompt less one token.
func TestClosedLoopSessionsHitTheirHistory(t *testing.T) {
	w, err := datasets.ParseWorkload("sessions:groups=3,users=2,system=1000,turns=5,question=100,output=50")
	if err != nil {
		t.Fatal(err)
	}
	c, err := datasets.NewClients(w, datasets.Arrivals{}, 6, 120, 0.5, 1)
	if err != nil {
		t.Fatal(err)
	}
	src := &recordingClients{c, map[int]spec.Request{}}
	cfg := testConfig()
	sink := &memSink{}
	sim, err := New(cfg, Options{Requests: sink})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sim.Run(src)
	if err != nil {
		t.Fatal(err)
	}
	m := sum.Metrics
	if m.Completed != 120 || m.PeakConcurrency != 6 {
		t.Fatalf("%d completed, peak concurrency %d; want 120 and the 6 clients", m.Completed, m.PeakConcurrency)
	}
	const bs = 16
	seenGroup := map[uint64]bool{}
	var hits int64
	for id := 0; id < 120; id++ {
		q, row := src.sent[id], sink.byID()[id]
		want := 0
		if q.Turn == 1 {
			if seenGroup[q.PrefixGroup] {
				want = q.PrefixTokens / bs * bs
			}
			seenGroup[q.PrefixGroup] = true
		} else {
			prev := w.Conversation.PromptTokens(q.Turn - 1)
			want = min((prev+q.OutputTokens-1)/bs, (q.PromptTokens-1)/bs) * bs
		}
		if row.CachedPromptTokens != want {
			t.Errorf("request %d (session %d turn %d, %d prompt tokens): %d cached, want %d", id, q.Session, q.Turn, q.PromptTokens, row.CachedPromptTokens, want)
		}
		hits += int64(want)
	}
	if m.PrefixCache.HitTokens != hits {
		t.Errorf("summary hit tokens %d, want %d", m.PrefixCache.HitTokens, hits)
	}
	t.Logf("hit rate %.3f, TTFT mean %.2f ms", m.PrefixCache.HitRate, m.TTFTMs.Mean)
}
