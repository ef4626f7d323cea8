package datasets

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// A permuted deck deals every group exactly its users' times per deck, in
// an order that changes from deck to deck.
func TestPermutedDeckDealsEachCardOnce(t *testing.T) {
	const groups, users = 1000, 3
	d := newPermutedDeck(groups*users, users, rand.New(rand.NewPCG(1, 2)))
	var orders [2][]int
	for k := range orders {
		count := make([]int, groups)
		for range groups * users {
			g := d.deal()
			count[g]++
			orders[k] = append(orders[k], g)
		}
		for g, n := range count {
			if n != users {
				t.Fatalf("deck %d: group %d dealt %d times, want %d", k, g, n, users)
			}
		}
	}
	same := 0
	for i := range orders[0] {
		if orders[0][i] == orders[1][i] {
			same++
		}
	}
	if same > len(orders[0])/10 {
		t.Errorf("second deck repeats %d of %d positions of the first", same, len(orders[0]))
	}
}

// A conversation workload of 10^18 or 10^10 system-prompt cards deals the
// few sessions a run needs in a few kilobytes, open loop and closed loop,
// instead of panicking (makeslice) or asking for 80 GB.
func TestHugeConversationDeckIsBounded(t *testing.T) {
	for _, ws := range []string{
		"shared-prefix:groups=1000000000,users=1000000000,system=100,question=10,output=10",
		"shared-prefix:groups=100000,users=100000,system=100,question=10,output=10",
		"sessions:groups=1000000000,users=1000000000,system=100,turns=3,question=10,output=10",
	} {
		w := mustWorkload(t, ws)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		var reqs []spec.Request
		var err error
		if w.Conversation.Turns > 1 {
			reqs, err = drainClients(w, 10)
		} else {
			reqs, err = Generate(w, Arrivals{Kind: ArrivalsPoisson, RateRPS: 5}, 10, 3)
		}
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("%s: %v", ws, err)
		}
		if len(reqs) != 10 {
			t.Fatalf("%s: %d requests, want 10", ws, len(reqs))
		}
		groups := map[uint64]bool{}
		for _, r := range reqs {
			groups[r.PrefixGroup] = true
		}
		if len(groups) < 2 {
			t.Errorf("%s: every request dealt the same system prompt", ws)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 1<<20 {
			t.Errorf("%s: 10 requests allocated %d bytes", ws, a)
		}
	}
}

// drainClients takes n requests of a closed-loop workload from one client,
// completing each as it comes.
func drainClients(w Workload, n int) ([]spec.Request, error) {
	c, err := NewClients(w, Arrivals{}, 1, n, 0, 1)
	if err != nil {
		return nil, err
	}
	var reqs []spec.Request
	for {
		r, ok := c.Next()
		if !ok {
			break
		}
		reqs = append(reqs, r)
		c.Complete(r.ID, r.ArrivalS+1)
	}
	return reqs, c.Err()
}
