package simulate

// prefixCache is one engine's paged KV cache with vLLM V1's automatic
// prefix caching: the block pool, its free block queue and the table from
// block hash to cached block (vllm/v1/core/block_pool.py, kv_cache_utils.py
// FreeKVCacheBlockQueue), and the per-request bookkeeping of full attention
// (single_type_kv_cache_manager.py FullAttentionManager, kv_cache_manager.py
// KVCacheManager; vLLM main, read 2025-12). It follows vLLM as follows:
//
//   - A block is cached when it becomes full, at the moment the tokens that
//     fill it are scheduled (allocate_slots caches up to num_computed +
//     num_new tokens), so a request scheduled later in the same step already
//     hits it. The hash chains from the first block: block j's hash mixes
//     block j-1's hash with block j's content (blockContent).
//   - Free blocks wait in one queue in eviction order. Blocks start in it in
//     index order; allocation pops the head and, if the block is cached,
//     evicts it from the table; freeing appends blocks whose reference count
//     drops to zero at the tail, a request's blocks last-first, so the tail
//     of a prompt is evicted before its head. A hit on a free cached block
//     ("touch") takes it out of the queue wherever it is: least recently
//     used eviction.
//   - A lookup walks the request's block hashes from the first and stops at
//     the first miss, over at most num_tokens - 1 tokens (the last token is
//     always computed to get logits), whole blocks only.
//   - The same content may be cached in two blocks (vLLM does not
//     de-duplicate, so block tables stay append-only); a lookup returns the
//     first cached and evicting one leaves the other.
//   - Allocation for a request with hits counts the hit blocks that sit in
//     the free queue as blocks it takes, and fails without side effects when
//     too few blocks are free.
//
// A block whose content only its own request can have (blockContent's
// private blocks: neither a shared prefix, a session nor named by hash
// ids) can only ever be hit by that request, after a preemption. Such
// blocks skip the table: the request keeps the list of private blocks it
// cached, in caching order, and looks its hashes up there, which finds
// what the table would (the first cached block still holding the hash).
// A trace with no shared content thus pays no table operation.
//
// vLLM also sets one "null" block aside; the simulator does not, with
// prefix caching or without, so block counts match the counting cache.
type prefixCache struct {
	blockSize int32
	// Per block: reference count, hash (0: not cached), free queue links
	// (-1: none) and the next block cached with the same hash (-1: none).
	ref        []int32
	hash       []uint64
	private    []bool
	prev, next []int32
	dup        []int32
	head, tail int32
	free       int
	table      blockTable

	// Counters.
	evictions int64

	// collect, with a host tier, makes cacheFull append each block it
	// caches to stored; hostSlot is the host tier's slot that last held
	// each block's content (offload.go, hostSlotOf).
	collect  bool
	stored   []int32
	hostSlot []int32
}

// reqBlocks is one request's KV blocks: vLLM's req_to_blocks and
// num_cached_block.
type reqBlocks struct {
	ids []int32
	// own is the private blocks the request cached, in caching order
	// (kept across preemptions; some may since have been evicted).
	own []int32
	// cached is the leading blocks that carry a hash; lastHash is the hash
	// of block cached-1, the parent of the next block to cache.
	cached   int32
	lastHash uint64
	// local is the blocks the request's local-attention layers hold
	// (spec.Model.LocalKVBlocks): no content a lookup can hit.
	local []int32
}

func newPrefixCache(blocks, blockSize int) *prefixCache {
	p := &prefixCache{blockSize: int32(blockSize), ref: make([]int32, blocks), hash: make([]uint64, blocks), private: make([]bool, blocks),
		prev: make([]int32, blocks), next: make([]int32, blocks), dup: make([]int32, blocks),
		head: -1, tail: -1, table: newBlockTable(blocks)}
	for b := range blocks {
		p.dup[b] = -1
		p.pushTail(int32(b))
	}
	return p
}

// numFree is the blocks in the free queue (cached ones included).
func (p *prefixCache) numFree() int { return p.free }

// pushTail appends block b to the free queue.
func (p *prefixCache) pushTail(b int32) {
	p.prev[b], p.next[b] = p.tail, -1
	if p.tail >= 0 {
		p.next[p.tail] = b
	} else {
		p.head = b
	}
	p.tail = b
	p.free++
}

// unlink takes block b out of the free queue.
func (p *prefixCache) unlink(b int32) {
	pv, nx := p.prev[b], p.next[b]
	if pv >= 0 {
		p.next[pv] = nx
	} else {
		p.head = nx
	}
	if nx >= 0 {
		p.prev[nx] = pv
	} else {
		p.tail = pv
	}
	p.prev[b], p.next[b] = -1, -1
	p.free--
}

// pop takes the block at the head of the free queue for a new use,
// evicting its cached content; the caller checked one is free.
func (p *prefixCache) pop() int32 {
	b := p.head
	p.unlink(b)
	switch {
	case p.private[b]:
		p.hash[b], p.private[b] = 0, false
		p.evictions++
	case p.hash[b] != 0:
		p.evict(b)
	}
	if p.hostSlot != nil {
		p.hostSlot[b] = -1 // new content: not on the host yet
	}
	p.ref[b] = 1
	return b
}

// evict removes block b from the table.
func (p *prefixCache) evict(b int32) {
	h := p.hash[b]
	if first := p.table.removeIf(h, b, p.dup[b]); first != b {
		for c := first; c >= 0; c = p.dup[c] {
			if p.dup[c] == b {
				p.dup[c] = p.dup[b]
				break
			}
		}
	}
	p.hash[b], p.dup[b] = 0, -1
	p.evictions++
}

// insert caches block b under hash h, after any block already cached
// under it.
func (p *prefixCache) insert(b int32, h uint64) {
	p.hash[b] = h
	first := p.table.getOrSet(h, b)
	if first < 0 {
		return
	}
	c := first
	for p.dup[c] >= 0 {
		c = p.dup[c]
	}
	p.dup[c] = b
}

// lookup returns the first block cached under hash h, or -1.
func (p *prefixCache) lookup(h uint64) int32 { return p.table.get(h) }

// longestHit appends to hits the cached blocks that hold the first blocks
// of c (a request whose blocks so far are r), at most maxTokens tokens'
// worth, stopping at the first miss
// (FullAttentionManager.find_longest_cache_hit), and returns them with the
// hash of the last one.
func (p *prefixCache) longestHit(c *blockContent, r *reqBlocks, maxTokens int32, hits []int32) ([]int32, uint64) {
	var h uint64
	n := maxTokens / p.blockSize
	for j := int32(0); j < n; j++ {
		var b int32 = -1
		if c.shared(j, p.blockSize) {
			b = p.lookup(c.blockHash(h, j, p.blockSize))
		} else {
			if len(r.own) == 0 {
				break
			}
			b = p.ownBlock(r, c.blockHash(h, j, p.blockSize))
		}
		if b < 0 {
			break
		}
		next := p.hash[b]
		hits = append(hits, b)
		h = next
	}
	return hits, h
}

// allocate gives r blocks for tokens tokens (vLLM's allocate_slots): first
// the cache hits of a newly scheduled request (hits, whose last block has
// hash hitHash; empty for a running one), then new blocks from the free
// queue; then it caches the blocks that cacheTokens tokens fill. It
// reports false, changing nothing, when too few blocks are free.
func (p *prefixCache) allocate(r *reqBlocks, c *blockContent, hits []int32, hitHash uint64, tokens, cacheTokens int32) bool {
	return p.allocateLocal(r, c, hits, hitHash, tokens, cacheTokens, 0)
}

// allocateLocal is allocate that also grows r's local-attention blocks to
// local, all or nothing.
func (p *prefixCache) allocateLocal(r *reqBlocks, c *blockContent, hits []int32, hitHash uint64, tokens, cacheTokens, local int32) bool {
	need := int((tokens+p.blockSize-1)/p.blockSize) - len(r.ids) - len(hits)
	needLocal := int(local) - len(r.local)
	evictable := 0
	for _, b := range hits {
		if p.ref[b] == 0 {
			evictable++
		}
	}
	if max(need, 0)+max(needLocal, 0)+evictable > p.free {
		return false
	}
	for range needLocal {
		r.local = append(r.local, p.pop())
	}
	for _, b := range hits { // touch
		if p.ref[b] == 0 {
			p.unlink(b)
		}
		p.ref[b]++
	}
	if len(hits) > 0 {
		r.ids = append(r.ids, hits...)
		r.cached, r.lastHash = int32(len(hits)), hitHash
	}
	for range need {
		r.ids = append(r.ids, p.pop())
	}
	p.cacheFull(r, c, cacheTokens)
	return true
}

// cacheFull caches r's blocks that tokens tokens fill and are not cached
// yet (BlockPool.cache_full_blocks).
func (p *prefixCache) cacheFull(r *reqBlocks, c *blockContent, tokens int32) {
	full := tokens / p.blockSize
	for j := r.cached; j < full; j++ {
		r.lastHash = c.blockHash(r.lastHash, j, p.blockSize)
		b := r.ids[j]
		if p.collect {
			p.stored = append(p.stored, b)
		}
		if c.shared(j, p.blockSize) {
			p.insert(b, r.lastHash)
			continue
		}
		p.hash[b], p.private[b] = r.lastHash, true
		r.own = append(r.own, b)
	}
	r.cached = max(r.cached, full)
}

// ownBlock returns the first of r's private blocks that still holds hash
// h, or -1.
func (p *prefixCache) ownBlock(r *reqBlocks, h uint64) int32 {
	for _, b := range r.own {
		if p.hash[b] == h && p.private[b] {
			return b
		}
	}
	return -1
}

// release drops r's blocks, last first, so that the tail of a sequence is
// evicted before its head (KVCacheManager.free); cached blocks keep their
// content until evicted.
func (p *prefixCache) release(r *reqBlocks) {
	for i := len(r.ids) - 1; i >= 0; i-- {
		b := r.ids[i]
		if p.ref[b]--; p.ref[b] == 0 {
			p.pushTail(b)
		}
	}
	r.ids = r.ids[:0]
	r.cached, r.lastHash = 0, 0
	for _, b := range r.local {
		p.ref[b] = 0
		p.pushTail(b)
	}
	r.local = r.local[:0]
}
