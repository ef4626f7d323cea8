package simulate

import (
	"math"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// reqState is the engine's view of one admitted request. It lives in a
// slab slot from admission to completion and is then released.
type reqState struct {
	id          int
	arrivalS    float64
	firstTokenS float64
	lastTokenS  float64
	prompt      int32
	output      int32 // output tokens asked for
	generated   int32 // output tokens produced
	computed    int32 // num_computed_tokens: tokens whose KV is (being) computed
	blocks      int32 // KV blocks held
	preemptions int32
	// kvTransferMs is the KV transfer that brought the request from a
	// prefill instance (disaggregated runs; NaN otherwise).
	kvTransferMs float64
	// epoch changes whenever the request is (re)admitted to the running
	// set, so a batch entry scheduled before a preemption is recognised.
	epoch    uint32
	finished bool
	// With prefix caching: what its tokens are, its blocks, and the prompt
	// tokens the cache held when it was first scheduled (-1 before).
	content      blockContent
	kv           reqBlocks
	cachedPrompt int32
	// load is its load from the host tier while one is in flight;
	// hostCached the prompt tokens its first lookup found there.
	load       hostLoad
	hostCached int32
	// With speculative decoding: the draft tokens proposed for its next
	// step (vLLM's spec_token_ids), its verify steps so far (the
	// acceptance draws' counter) and the steps that produced tokens (its
	// output chunks).
	spec, verifies, chunks int32
}

// numTokens is vLLM's num_tokens: prompt plus output tokens so far.
func (r *reqState) numTokens() int32 { return r.prompt + r.generated }

// batchEntry is one scheduled request of a batch.
type batchEntry struct {
	slot   int32
	epoch  uint32
	tokens int32 // new tokens scheduled
	endPos int32 // computed tokens after this entry
	drafts int32 // draft tokens among them (speculative decoding)
}

// batch is one scheduled step.
type batch struct {
	entries                    []batchEntry
	tokens                     int
	prefillTokens, prefillSeqs int
	decodeSeqs, decodeTokens   int
	preempted                  int
}

// scheduler is the vLLM V1 scheduling policy of one engine: a token budget
// per step, at most max_num_seqs running requests, running requests first
// (in order) then waiting ones, chunked prefill, a paged KV cache, and
// preemption by recompute of the last running request when blocks run out.
// It holds no clock: the engine decides when steps run.
type scheduler struct {
	cfg       runresult.EngineConfig // MaxModelLen resolved
	reqs      []reqState
	freeSlots []int32
	running   []int32
	waiting   deque
	// ready holds requests whose KV cache arrived from a prefill instance
	// into blocks reserved for them; they are scheduled before waiting
	// ones: they need no new block to start, so nothing can stall them
	// behind a request that waits for blocks they hold.
	ready deque

	totalBlocks, freeBlocks int
	peakUsedBlocks          int
	preemptions             int64
	epoch                   uint32

	// pc is the prefix cache (nil when prefix caching is off: blocks are
	// then only counted); hits is scratch for its lookups.
	pc      *prefixCache
	hits    []int32
	pcStats runresult.PrefixCacheStats
	// host is the host tier of KV blocks (nil: none; offload.go), nowS
	// the time of the schedule call in progress (the engine sets it).
	host     *hostTier
	hostLink *kvLink
	nowS     float64
	loading  int // loads from the host tier in flight
	// Scratch of storeComputed.
	storeHashes []uint64
	storeBlocks []int32
	storeSlots  []int32

	// itl receives every inter-token gap, milliseconds.
	itl *Histogram
	// done is called when a request has produced all its output tokens,
	// before its slot is released.
	done func(r *reqState, nowS float64)
	// holdKV keeps a finished request's KV blocks: done takes them over
	// (takeKV) and gives them back with releaseKV (a prefill
	// instance holds a request's KV cache until it is transferred).
	holdKV bool
	// localKV is newScheduler's: the local-attention layers' blocks.
	localKV func(tokens int) int
	// tookWaiting, when set, is called after a schedule that took
	// requests from the waiting queue (the run then reads arrivals it
	// held back, see Simulation.release).
	tookWaiting func()
	// sd is the engine's speculative decoding (nil: none).
	sd *specDecode
	// first, when set, is called with a request's ID and the time as it
	// produces its first output token (Options.FirstToken).
	first func(id int, nowS float64)
}

// newScheduler returns the scheduler of one engine with blocks KV blocks;
// localKV, when not nil, is the blocks a sequence of so many tokens holds in
// its local-attention layers on top of the blocks its tokens fill
// (spec.Model.LocalKVBlocks).
func newScheduler(cfg runresult.EngineConfig, blocks int, itl *Histogram, done func(*reqState, float64), holdKV bool, localKV func(tokens int) int) *scheduler {
	s := &scheduler{cfg: cfg, totalBlocks: blocks, freeBlocks: blocks, itl: itl, done: done, holdKV: holdKV,
		running: make([]int32, 0, cfg.MaxNumSeqs), localKV: localKV}
	if cfg.EnablePrefixCaching {
		s.pc = newPrefixCache(blocks, cfg.BlockSize)
	}
	return s
}

// admit queues a new request at the back of the waiting queue and returns
// its slot.
func (s *scheduler) admit(q *spec.Request) int32 {
	var slot int32
	if n := len(s.freeSlots); n > 0 {
		slot = s.freeSlots[n-1]
		s.freeSlots = s.freeSlots[:n-1]
	} else {
		slot = int32(len(s.reqs))
		s.reqs = append(s.reqs, reqState{})
	}
	old := &s.reqs[slot]
	kv := reqBlocks{ids: old.kv.ids[:0], own: old.kv.own[:0], local: old.kv.local[:0]} // keep the slot's buffers
	s.reqs[slot] = reqState{id: q.ID, arrivalS: q.ArrivalS, prompt: int32(q.PromptTokens), output: int32(q.OutputTokens),
		kvTransferMs: math.NaN(), cachedPrompt: -1, kv: kv, load: old.load}
	s.reqs[slot].load.reset()
	if s.pc != nil {
		s.reqs[slot].content = contentOf(q)
	}
	s.waiting.pushBack(slot)
	return slot
}

// admitTransferred queues a request whose prompt KV cache arrived from a
// prefill instance into blocks reserved for it. Like vLLM with a full
// prefix hit, it recomputes its last prompt token to get logits, so its
// first step schedules one token on top of the cached prompt.
func (s *scheduler) admitTransferred(q *spec.Request, blocks int, preemptions int32, transferMs float64) {
	slot := s.admit(q)
	s.waiting.popBack()
	s.ready.pushBack(slot)
	r := &s.reqs[slot]
	r.computed = r.prompt - 1
	r.blocks = int32(blocks)
	r.preemptions = preemptions
	r.kvTransferMs = transferMs
}

// blocksFor is the KV blocks tokens tokens of one sequence take.
func (s *scheduler) blocksFor(tokens int) int {
	return (tokens+s.cfg.BlockSize-1)/s.cfg.BlockSize + int(s.localBlocks(int32(tokens)))
}

// localBlocks is the blocks the local-attention layers of a sequence of
// tokens tokens hold (0 for a model without them).
func (s *scheduler) localBlocks(tokens int32) int32 {
	if s.localKV == nil {
		return 0
	}
	return int32(s.localKV(int(tokens)))
}

// reserve takes n free blocks, reporting false (taking nothing) when fewer
// are free.
func (s *scheduler) reserve(n int) bool {
	if n > s.freeBlocks {
		return false
	}
	s.freeBlocks -= n
	if u := s.usedBlocks(); u > s.peakUsedBlocks {
		s.peakUsedBlocks = u
	}
	return true
}

// heldKV is a finished request's KV blocks that done took over (holdKV).
type heldKV struct {
	blocks int
	kv     reqBlocks
}

// takeKV hands r's blocks over to the caller.
func (s *scheduler) takeKV(r *reqState) heldKV {
	h := heldKV{blocks: int(r.blocks), kv: r.kv}
	r.blocks, r.kv = 0, reqBlocks{}
	return h
}

// releaseKV gives back blocks taken with takeKV; with prefix caching
// their content stays cached until evicted.
func (s *scheduler) releaseKV(h *heldKV) {
	if s.pc != nil {
		s.pc.release(&h.kv)
		s.freeBlocks = s.pc.numFree()
		return
	}
	s.freeBlocks += h.blocks
}

// releaseBlocks returns n blocks taken over by reserve.
func (s *scheduler) releaseBlocks(n int) { s.freeBlocks += n }

// outstanding is the number of requests admitted and not finished.
func (s *scheduler) outstanding() int { return len(s.reqs) - len(s.freeSlots) }

// usedBlocks is the number of KV blocks held by requests.
func (s *scheduler) usedBlocks() int { return s.totalBlocks - s.freeBlocks }

// allocate grows r's KV blocks to hold tokens tokens and lookahead slots
// beyond them (at most max_model_len in all), as vLLM's allocate_slots; it
// reports false, allocating nothing, when too few blocks are free.
func (s *scheduler) allocate(r *reqState, tokens, lookahead int32) bool {
	bs := int32(s.cfg.BlockSize)
	cache := tokens
	if lookahead > 0 || tokens > r.numTokens() {
		// Draft tokens and lookahead slots hold KV but no content the
		// prefix cache keeps (speculative.go).
		cache = min(tokens, r.numTokens())
		tokens = min(tokens+lookahead, int32(s.cfg.MaxModelLen))
	}
	if s.pc != nil {
		return s.allocateCached(r, tokens, cache, nil, 0)
	}
	need := int((tokens+bs-1)/bs + s.localBlocks(tokens) - r.blocks)
	if need <= 0 {
		return true
	}
	if need > s.freeBlocks {
		return false
	}
	s.freeBlocks -= need
	r.blocks += int32(need)
	if u := s.usedBlocks(); u > s.peakUsedBlocks {
		s.peakUsedBlocks = u
	}
	return true
}

func (s *scheduler) free(r *reqState) {
	if s.pc != nil {
		s.pc.release(&r.kv)
		s.freeBlocks = s.pc.numFree()
		r.blocks = 0
		return
	}
	s.freeBlocks += int(r.blocks)
	r.blocks = 0
}

// newTokens is the number of tokens r would schedule with budget tokens
// left: what is not computed yet (its draft tokens included), capped by
// the long-prefill threshold and the budget, and with speculative decoding
// by max_model_len - 1 (speculative.go).
func (s *scheduler) newTokens(r *reqState, budget int) int32 {
	n := r.numTokens() + r.spec - r.computed
	if t := int32(s.cfg.LongPrefillTokenThreshold); t > 0 && n > t {
		n = t
	}
	n = min(n, int32(budget))
	if s.sd != nil {
		n = min(n, int32(s.cfg.MaxModelLen)-1-r.computed)
	}
	return n
}

// lookahead is the KV slots r's allocation takes beyond its scheduled
// tokens: vLLM's num_lookahead_tokens, except for a request that has
// computed nothing yet (speculative.go).
func (s *scheduler) lookahead(r *reqState) int32 {
	if s.sd == nil || r.computed == 0 {
		return 0
	}
	return s.sd.lookahead
}

// schedule builds the next batch into b and its cost view into shape, and
// reports whether anything was scheduled. It follows vLLM V1's
// Scheduler.schedule: running requests in order, preempting from the back
// of the running list when blocks run out, then waiting requests in order
// unless something was preempted.
func (s *scheduler) schedule(b *batch, shape *cost.BatchShape) bool {
	b.entries = b.entries[:0]
	b.tokens, b.prefillTokens, b.prefillSeqs, b.decodeSeqs, b.decodeTokens, b.preempted = 0, 0, 0, 0, 0, 0
	shape.Reset()
	budget := s.cfg.MaxNumBatchedTokens

	for i := 0; i < len(s.running) && budget > 0; {
		slot := s.running[i]
		r := &s.reqs[slot]
		n := s.newTokens(r, budget)
		if n <= 0 { // its previous batch is still in flight (pipeline parallelism)
			i++
			continue
		}
		scheduled := false
		for {
			if s.allocate(r, r.computed+n, s.lookahead(r)) {
				scheduled = true
				break
			}
			victim := s.running[len(s.running)-1]
			s.running = s.running[:len(s.running)-1]
			s.preempt(victim)
			b.preempted++
			if victim == slot {
				break
			}
		}
		if !scheduled {
			break
		}
		// The drafts scheduled: those the budget left room for.
		drafts := min(max(r.computed+n-r.numTokens(), 0), r.spec)
		r.spec = 0
		s.add(b, shape, slot, n, drafts)
		budget -= int(n)
		i++
	}

	if b.preempted == 0 {
		if s.tookWaiting != nil {
			defer func(n int) {
				if s.waiting.len() < n {
					s.tookWaiting()
				}
			}(s.waiting.len())
		}
		for s.waiting.len()+s.ready.len() > 0 && budget > 0 && len(s.running) < s.cfg.MaxNumSeqs {
			queue := &s.waiting
			if s.ready.len() > 0 {
				queue = &s.ready
			}
			slot := queue.front()
			r := &s.reqs[slot]
			// A request with nothing computed looks for its prefix in
			// the cache (vLLM's get_computed_blocks); the hit counts only
			// once its blocks are allocated.
			computed, hitHash, lookahead := r.computed, uint64(0), s.lookahead(r)
			s.hits = s.hits[:0]
			if computed == 0 && s.pc != nil {
				s.hits, hitHash = s.pc.longestHit(&r.content, &r.kv, r.numTokens()-1, s.hits)
				computed = int32(len(s.hits)) * int32(s.cfg.BlockSize)
				if s.host != nil {
					// Host hits load before the request is scheduled.
					if started, ok := s.startLoad(slot, hitHash); started {
						queue.popFront()
						continue
					} else if !ok {
						break
					}
				}
			}
			n := r.numTokens() - computed
			if t := int32(s.cfg.LongPrefillTokenThreshold); t > 0 && n > t {
				n = t
			}
			if !s.cfg.EnableChunkedPrefill && int(n) > budget {
				break
			}
			n = min(n, int32(budget))
			if s.pc != nil && r.computed == 0 {
				if !s.allocateCached(r, computed+n, computed+n, s.hits, hitHash) {
					break
				}
				s.countLookup(r, computed)
				r.computed = computed
			} else if !s.allocate(r, r.computed+n, lookahead) {
				break
			}
			queue.popFront()
			s.epoch++
			r.epoch = s.epoch
			s.running = append(s.running, slot)
			s.add(b, shape, slot, n, 0)
			budget -= int(n)
		}
	}
	if len(b.entries) == 0 && s.host != nil && s.unstick() {
		return s.schedule(b, shape)
	}
	return len(b.entries) > 0
}

// add schedules n new tokens of the request in slot into the batch, drafts
// of them draft tokens to verify. With speculative decoding every decode
// is a verify pass of its n query tokens, logits at each
// (BatchShape.DecodeQueries, Logits).
func (s *scheduler) add(b *batch, shape *cost.BatchShape, slot, n, drafts int32) {
	r := &s.reqs[slot]
	ctx := int(r.computed)
	r.computed += n
	b.entries = append(b.entries, batchEntry{slot: slot, epoch: r.epoch, tokens: n, endPos: r.computed, drafts: drafts})
	b.tokens += int(n)
	shape.Tokens += int(n)
	shape.Seqs++
	if n == 1+drafts && r.generated > 0 && r.computed == r.numTokens()+drafts {
		b.decodeSeqs++
		b.decodeTokens += int(n)
		shape.DecodeContexts = append(shape.DecodeContexts, ctx)
		if s.sd != nil {
			shape.DecodeQueries = append(shape.DecodeQueries, int(n))
			shape.Logits += int(n)
		}
		return
	}
	if s.sd != nil {
		shape.Logits++
	}
	b.prefillSeqs++
	b.prefillTokens += int(n)
	shape.PrefillChunks = append(shape.PrefillChunks, int(n))
	shape.PrefillContexts = append(shape.PrefillContexts, ctx)
}

// preempt frees a running request's blocks and puts it back at the front of
// the waiting queue to recompute everything it had (vLLM's recompute
// preemption): its output tokens so far are kept.
func (s *scheduler) preempt(slot int32) {
	r := &s.reqs[slot]
	s.free(r)
	r.computed, r.spec = 0, 0
	s.epoch++
	r.epoch = s.epoch // batches in flight no longer count for it
	r.preemptions++
	s.preemptions++
	s.waiting.pushFront(slot)
}

// complete applies the outputs of batch b, finished at nowS: every entry
// that computed all of its request's tokens samples one output token (with
// speculative decoding, one plus the drafts accepted, and the drafter
// proposes the next drafts: speculative.go); finished requests free their
// blocks, leave the running list and release their slots. An output
// chunk, whatever its tokens, is one inter-token gap, as vLLM's benchmark
// measures ITL per streamed chunk.
func (s *scheduler) complete(b *batch, nowS float64) {
	if s.host != nil {
		s.host.issue(nowS)
	}
	finished := 0
	for i := range b.entries {
		e := &b.entries[i]
		r := &s.reqs[e.slot]
		if r.epoch != e.epoch || e.endPos != r.numTokens()+e.drafts {
			continue // preempted since scheduled, or a prompt chunk
		}
		gained := int32(1)
		if e.drafts > 0 {
			a := s.sd.accept(r, e.drafts)
			r.computed -= e.drafts - a
			gained = min(1+a, r.output-r.generated)
		}
		r.generated += gained
		r.chunks++
		if r.generated == gained {
			r.firstTokenS = nowS
			if s.first != nil {
				s.first(r.id, nowS)
			}
		} else {
			s.itl.Add((nowS - r.lastTokenS) * 1e3)
		}
		r.lastTokenS = nowS
		if s.sd != nil && r.generated < r.output {
			r.spec = s.sd.k
		}
		if r.generated == r.output {
			r.finished = true
			if !s.holdKV {
				s.free(r)
			}
			finished++
		}
	}
	if finished == 0 {
		return
	}
	kept := s.running[:0]
	for _, slot := range s.running {
		r := &s.reqs[slot]
		if !r.finished {
			kept = append(kept, slot)
			continue
		}
		s.done(r, nowS)
		s.freeSlots = append(s.freeSlots, slot)
	}
	s.running = kept
}

// deque is a ring buffer of slots: the waiting queue, which takes preempted
// requests at the front.
type deque struct {
	buf        []int32
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) front() int32 { return d.buf[d.head] }

func (d *deque) grow() {
	if d.size < len(d.buf) {
		return
	}
	nb := make([]int32, max(16, 2*len(d.buf)))
	for i := 0; i < d.size; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(v int32) {
	d.grow()
	d.buf[(d.head+d.size)%len(d.buf)] = v
	d.size++
}

func (d *deque) pushFront(v int32) {
	d.grow()
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = v
	d.size++
}

func (d *deque) popBack() int32 {
	d.size--
	return d.buf[(d.head+d.size)%len(d.buf)]
}

func (d *deque) popFront() int32 {
	v := d.buf[d.head]
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return v
}
