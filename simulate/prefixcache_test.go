package simulate

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// freeQueue lists the free queue head to tail.
func (p *prefixCache) freeQueue() []int32 {
	var out []int32
	for b := p.head; b >= 0; b = p.next[b] {
		out = append(out, b)
	}
	return out
}

// checkPool checks the pool's structure: queue links both ways, the free
// count, reference counts and the table against the block hashes.
func checkPool(t *testing.T, p *prefixCache) {
	t.Helper()
	q := p.freeQueue()
	if len(q) != p.free {
		t.Fatalf("free queue has %d blocks, free count %d", len(q), p.free)
	}
	back := []int32{}
	for b := p.tail; b >= 0; b = p.prev[b] {
		back = append(back, b)
	}
	slices.Reverse(back)
	if !slices.Equal(q, back) {
		t.Fatalf("free queue forward %v, backward %v", q, back)
	}
	for _, b := range q {
		if p.ref[b] != 0 {
			t.Fatalf("block %d in the free queue with %d references", b, p.ref[b])
		}
	}
	for b, h := range p.hash {
		if h == 0 || p.private[b] {
			continue
		}
		found := false
		for c := p.lookup(h); c >= 0; c = p.dup[c] {
			found = found || c == int32(b)
		}
		if !found {
			t.Fatalf("block %d has hash %x but the table does not reach it", b, h)
		}
	}
}

func TestPrefixCacheHitsAndLRUEviction(t *testing.T) {
	// 10 blocks of 4 tokens. A and B share an 8-token system prompt
	// (group 7): two blocks.
	p := newPrefixCache(10, 4)
	a := blockContent{uid: 1, group: 7, groupTokens: 8}
	b := blockContent{uid: 2, group: 7, groupTokens: 8}
	var ra, rb reqBlocks

	hits, _ := p.longestHit(&a, &ra, 10-1, nil)
	if len(hits) != 0 {
		t.Fatalf("empty cache: hits %v", hits)
	}
	if !p.allocate(&ra, &a, nil, 0, 10, 10) {
		t.Fatal("A: allocation failed")
	}
	// A takes blocks 0, 1, 2 from the head; 10 tokens fill two blocks.
	if !slices.Equal(ra.ids, []int32{0, 1, 2}) || ra.cached != 2 {
		t.Fatalf("A: blocks %v, cached %d; want [0 1 2], 2", ra.ids, ra.cached)
	}

	// B (12 tokens) may hit at most (12-1)/4 = 2 blocks: the group's.
	hits, h := p.longestHit(&b, &rb, 12-1, nil)
	if !slices.Equal(hits, []int32{0, 1}) {
		t.Fatalf("B: hits %v, want [0 1]", hits)
	}
	if !p.allocate(&rb, &b, hits, h, 12, 12) {
		t.Fatal("B: allocation failed")
	}
	if !slices.Equal(rb.ids, []int32{0, 1, 3}) || rb.cached != 3 || p.ref[0] != 2 || p.ref[1] != 2 {
		t.Fatalf("B: blocks %v, cached %d, refs %v", rb.ids, rb.cached, p.ref[:4])
	}
	checkPool(t, p)

	// Freeing appends blocks whose count drops to zero, each request's
	// last block first.
	p.release(&ra)
	p.release(&rb)
	if q := p.freeQueue(); !slices.Equal(q, []int32{4, 5, 6, 7, 8, 9, 2, 3, 1, 0}) {
		t.Fatalf("free queue %v, want [4 5 6 7 8 9 2 3 1 0]", q)
	}
	checkPool(t, p)

	// A later request of the group still hits both blocks, taking them out
	// of the queue (touch): they count against the free blocks.
	c := blockContent{uid: 3, group: 7, groupTokens: 8}
	var rc reqBlocks
	hits, h = p.longestHit(&c, &rc, 9-1, nil)
	if !slices.Equal(hits, []int32{0, 1}) {
		t.Fatalf("C: hits %v, want [0 1]", hits)
	}
	if !p.allocate(&rc, &c, hits, h, 9, 9) || !slices.Equal(rc.ids, []int32{0, 1, 4}) {
		t.Fatalf("C: blocks %v, want [0 1 4]", rc.ids)
	}
	if q := p.freeQueue(); !slices.Equal(q, []int32{5, 6, 7, 8, 9, 2, 3}) {
		t.Fatalf("free queue %v after the touch", q)
	}
	p.release(&rc)
	// Queue: 5..9, 2, 3, then C's blocks last first: 4, 1, 0.

	// Allocating eight blocks takes the head first: 5..9 and 2 carry no
	// hash, 3 (B's third, full block) is evicted, then 4.
	var rd reqBlocks
	d := blockContent{uid: 4}
	if !p.allocate(&rd, &d, nil, 0, 32, 0) {
		t.Fatal("D: allocation failed")
	}
	if !slices.Equal(rd.ids, []int32{5, 6, 7, 8, 9, 2, 3, 4}) || p.evictions != 1 {
		t.Fatalf("D: blocks %v, evictions %d; want [5 6 7 8 9 2 3 4], 1", rd.ids, p.evictions)
	}
	// One more evicts block 1, the group's second block: the chain now
	// hits only its first block, whose hash is still cached.
	var re reqBlocks
	if !p.allocate(&re, &d, nil, 0, 4, 0) || !slices.Equal(re.ids, []int32{1}) || p.evictions != 2 {
		t.Fatalf("E: blocks %v, evictions %d", re.ids, p.evictions)
	}
	if hits, _ = p.longestHit(&c, &rc, 100, nil); !slices.Equal(hits, []int32{0}) {
		t.Fatalf("after evicting block 1: hits %v, want [0]", hits)
	}
	// No room: an allocation that needs two blocks fails and changes
	// nothing, and so does one whose hit block is the only free one.
	var rf reqBlocks
	if p.allocate(&rf, &d, nil, 0, 8, 0) || len(rf.ids) != 0 || p.numFree() != 1 {
		t.Fatalf("over-allocation: blocks %v, free %d", rf.ids, p.numFree())
	}
	hits, h = p.longestHit(&c, &rc, 100, nil)
	if p.allocate(&rf, &c, hits, h, 8, 8) || len(rf.ids) != 0 || p.ref[0] != 0 {
		t.Fatalf("hit without room: blocks %v, ref %d", rf.ids, p.ref[0])
	}
	checkPool(t, p)
	p.release(&rd)
	p.release(&re)
	if p.numFree() != 10 {
		t.Fatalf("%d blocks free after every release, want 10", p.numFree())
	}
	checkPool(t, p)
}

func TestPrefixCachePreemptedRequestFindsItsOwnBlocks(t *testing.T) {
	// A 20-token prompt with 4-token blocks, then 6 output tokens decoded
	// one a step, as the scheduler does: allocate computed+1 tokens and
	// cache the blocks they fill.
	p := newPrefixCache(16, 4)
	c := blockContent{uid: 9}
	var r reqBlocks
	if !p.allocate(&r, &c, nil, 0, 20, 20) {
		t.Fatal("prefill")
	}
	for tokens := int32(21); tokens <= 25; tokens++ {
		if !p.allocate(&r, &c, nil, 0, tokens, tokens) {
			t.Fatal("decode")
		}
	}
	// 25 tokens computed (20 prompt + 5 outputs fed back; the sixth was
	// just sampled): 7 blocks, 6 full and cached.
	if len(r.ids) != 7 || r.cached != 6 {
		t.Fatalf("blocks %v, cached %d; want 7 blocks, 6 cached", r.ids, r.cached)
	}
	own := slices.Clone(r.ids)
	p.release(&r) // preempted: blocks freed, content kept
	// Re-admitted with 26 tokens (prompt and six outputs): it may hit
	// (26-1)/4 = 6 blocks, all its own, including the two that hold
	// output tokens.
	hits, h := p.longestHit(&c, &r, 26-1, nil)
	if !slices.Equal(hits, own[:6]) {
		t.Fatalf("hits %v, want its own first six blocks %v", hits, own[:6])
	}
	// Another request with other content hits nothing.
	other := blockContent{uid: 10}
	if hs, _ := p.longestHit(&other, &reqBlocks{}, 25, nil); len(hs) != 0 {
		t.Fatalf("another request hit %v", hs)
	}
	// Its recomputation needs 26 - 24 = 2 tokens in one new block.
	if !p.allocate(&r, &c, hits, h, 26, 26) || len(r.ids) != 7 || r.cached != 6 {
		t.Fatalf("re-admission: blocks %v, cached %d", r.ids, r.cached)
	}
	checkPool(t, p)
}

func TestPrefixCacheDuplicateBlocks(t *testing.T) {
	// Two requests of one group, both past their hits, compute the same
	// block: vLLM caches both copies; a lookup finds the first, and
	// evicting it leaves the second.
	p := newPrefixCache(4, 4)
	g := blockContent{uid: 1, group: 5, groupTokens: 4}
	g2 := blockContent{uid: 2, group: 5, groupTokens: 4}
	var r1, r2 reqBlocks
	if !p.allocate(&r1, &g, nil, 0, 4, 0) || !p.allocate(&r2, &g2, nil, 0, 4, 0) {
		t.Fatal("allocate")
	}
	p.cacheFull(&r1, &g, 4)
	p.cacheFull(&r2, &g2, 4)
	if p.hash[0] != p.hash[1] || p.lookup(p.hash[0]) != 0 || p.dup[0] != 1 {
		t.Fatalf("hashes %x %x, lookup %d, dup %d", p.hash[0], p.hash[1], p.lookup(p.hash[0]), p.dup[0])
	}
	p.release(&r1)
	p.release(&r2)
	var r3 reqBlocks
	if !p.allocate(&r3, &blockContent{uid: 3}, nil, 0, 12, 0) { // takes 2, 3, then 0 (evicted)
		t.Fatal("allocate")
	}
	if got := p.lookup(p.hash[1]); got != 1 || p.hash[0] != 0 {
		t.Fatalf("after evicting block 0: lookup %d, want 1", got)
	}
	checkPool(t, p)
}

func TestBlockContentNames(t *testing.T) {
	const bs = 16
	chain := func(c *blockContent, n int32) []uint64 {
		var h uint64
		out := make([]uint64, n)
		for j := range n {
			h = c.blockHash(h, j, bs)
			out[j] = h
		}
		return out
	}
	tests := []struct {
		name   string
		a, b   blockContent
		shared int // leading blocks with equal hashes, of 8
	}{
		{"unrelated", blockContent{uid: 1}, blockContent{uid: 2}, 0},
		{"same group, 40-token prefix: 2 full blocks", blockContent{uid: 1, group: 3, groupTokens: 40}, blockContent{uid: 2, group: 3, groupTokens: 40}, 2},
		{"other groups", blockContent{uid: 1, group: 3, groupTokens: 64}, blockContent{uid: 2, group: 4, groupTokens: 64}, 0},
		{"same session: every block", blockContent{uid: 1, group: 3, groupTokens: 32, session: 8}, blockContent{uid: 2, group: 3, groupTokens: 32, session: 8}, 8},
		{"other sessions, same system prompt", blockContent{uid: 1, group: 3, groupTokens: 32, session: 8}, blockContent{uid: 2, group: 3, groupTokens: 32, session: 9}, 2},
		{"hash ids 64 tokens each, first two equal", blockContent{uid: 1, ids: []uint64{5, 6, 7}, idTokens: 64, idCovered: 192},
			blockContent{uid: 2, ids: []uint64{5, 6, 8}, idTokens: 64, idCovered: 192}, 8},
		{"hash ids, second differs", blockContent{uid: 1, ids: []uint64{5, 6}, idTokens: 64, idCovered: 128},
			blockContent{uid: 2, ids: []uint64{5, 7}, idTokens: 64, idCovered: 128}, 4},
		{"hash ids cover 100 tokens: 6 blocks named", blockContent{uid: 1, ids: []uint64{5, 6}, idTokens: 64, idCovered: 100},
			blockContent{uid: 2, ids: []uint64{5, 6}, idTokens: 64, idCovered: 100}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ha, hb := chain(&tc.a, 8), chain(&tc.b, 8)
			n := 0
			for n < 8 && ha[n] == hb[n] {
				n++
			}
			if n != tc.shared {
				t.Fatalf("%d leading blocks shared, want %d", n, tc.shared)
			}
			for j := n; j < 8; j++ {
				if ha[j] == hb[j] {
					t.Fatalf("block %d equal after the chain diverged at %d", j, n)
				}
			}
		})
	}
}

// TestBlockTableAgainstMap runs random sets, gets and removes on a small
// table (long probe runs, wrap-around) and on a Go map, and compares.
func TestBlockTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tb := newBlockTable(24) // 64 slots
	ref := map[uint64]int32{}
	keys := make([]uint64, 40)
	for i := range keys {
		// Few distinct low bits: many keys share a home slot.
		keys[i] = uint64(rng.IntN(8))<<59 | uint64(rng.IntN(64)) | 1<<40
	}
	for step := range 20000 {
		k := keys[rng.IntN(len(keys))]
		_, present := ref[k]
		switch op := rng.IntN(3); {
		case op == 0 && (present || len(ref) < 30):
			v := int32(step)
			tb.set(k, v)
			ref[k] = v
		case op == 1 && present:
			tb.remove(k)
			delete(ref, k)
		}
		for _, q := range keys {
			want, ok := ref[q]
			if !ok {
				want = -1
			}
			if got := tb.get(q); got != want {
				t.Fatalf("step %d: get(%x) = %d, want %d", step, q, got, want)
			}
		}
	}
}
