package simulate

import "math"

// hostTier is one engine's host-memory tier of KV blocks: vLLM's native
// CPU offloading (--kv-offloading-size with --kv-offloading-backend
// native: the OffloadingConnector with the CPU backend and its LRU
// manager; vllm/distributed/kv_transfer/kv_connector/v1/
// offloading_connector.py, vllm/v1/kv_offload/lru_manager.py and cpu.py,
// read 2026-12). It follows vLLM as follows:
//
//   - Blocks are stored as they are computed, not when the GPU evicts
//     them: when a step schedules the tokens that fill a request's blocks,
//     those blocks are stored (OffloadingConnectorScheduler.
//     _get_reqs_to_store, prepare_store), and a request newly scheduled
//     stores its GPU hits the tier lacks; hashes the tier holds are
//     skipped. The copy starts when the step's forward pass ends
//     (wait_for_save) and runs over the GPU-to-host direction of the host
//     link, copies one after another; a block is found by lookups only
//     once copied (BlockStatus.is_ready).
//   - Room comes from the least recently used ready blocks no load is
//     reading; when too few can go, the request's new blocks are not
//     stored (prepare_store returns None).
//   - A lookup continues after the GPU's prefix hits and stops at the
//     first miss (get_num_new_matched_tokens, lookup); when the request is
//     scheduled, its blocks the tier holds are touched last first, so the
//     head of a prefix is the most recently used (vLLM touches at every
//     lookup; see storeComputed).
//   - Blocks are the GPU's block size (block_size_factor 1, vLLM's
//     default); one block's bytes are those of every GPU of the engine
//     (CPUOffloadingSpec: page size x layers x world size).
//
// Slots of the tier are either free (a stack) or in one LRU list, head
// least recently used; the table maps each stored hash to its slot.
type hostTier struct {
	blockSize int32
	table     blockTable
	ent       []hostEntry
	head      int32
	tail      int32
	free      []int32
	// pending is the slots stored by the batch in flight, issued when
	// it ends (issue).
	pending []int32
	// blockBytes is one block's bytes on one GPU; bytesPerS the host
	// link of one GPU, each direction; d2hFreeS when its GPU-to-host
	// direction is free.
	blockBytes, bytesPerS float64
	d2hFreeS              float64

	stored, evictions int64
}

// hostEntry is one slot of the tier: the hash it holds (0: free), when its
// copy to the host ends (+Inf: not issued yet), the loads in flight reading
// it, and its LRU links; one slot's fields share a cache line.
type hostEntry struct {
	hash       uint64
	readyS     float64
	loads      int32
	prev, next int32
}

func newHostTier(blocks int, blockSize int, blockBytes, bytesPerS float64) *hostTier {
	h := &hostTier{blockSize: int32(blockSize), table: newBlockTable(blocks), ent: make([]hostEntry, blocks),
		head: -1, tail: -1, free: make([]int32, blocks), blockBytes: blockBytes, bytesPerS: bytesPerS}
	for i := range blocks {
		h.free[i] = int32(blocks - 1 - i) // slot 0 on top
	}
	return h
}

// pushTail appends slot s to the LRU list (most recently used).
func (h *hostTier) pushTail(s int32) {
	h.ent[s].prev, h.ent[s].next = h.tail, -1
	if h.tail >= 0 {
		h.ent[h.tail].next = s
	} else {
		h.head = s
	}
	h.tail = s
}

// unlink takes slot s out of the LRU list.
func (h *hostTier) unlink(s int32) {
	pv, nx := h.ent[s].prev, h.ent[s].next
	if pv >= 0 {
		h.ent[pv].next = nx
	} else {
		h.head = nx
	}
	if nx >= 0 {
		h.ent[nx].prev = pv
	} else {
		h.tail = pv
	}
}

// touch makes slot s the most recently used.
func (h *hostTier) touch(s int32) {
	if h.tail != s {
		h.unlink(s)
		h.pushTail(s)
	}
}

// lookup sets l.slots to the ready slots holding blocks from..n-1 of c
// (block from's parent hashing to parent), stopping at the first miss,
// and l.hashes to their hashes. A request that waits for GPU blocks looks
// up again every step: when l holds the lookup of the same blocks, the
// slots that still hold their hashes and are ready are kept without
// hashing or probing them again.
func (h *hostTier) lookup(c *blockContent, parent uint64, from, n int32, nowS float64, l *hostLoad) {
	k := 0
	switch {
	case l.from != from || l.parent != parent:
	case l.evictions == h.evictions:
		// A slot found ready stays ready until evicted, and none was.
		k = len(l.slots)
	default:
		for k < len(l.slots) && h.ent[l.slots[k]].hash == l.hashes[k] && h.ent[l.slots[k]].readyS <= nowS {
			k++
		}
	}
	l.slots, l.hashes, l.from, l.parent, l.evictions = l.slots[:k], l.hashes[:k], from, parent, h.evictions
	if k > 0 {
		parent = l.hashes[k-1]
	}
	for j := from + int32(k); j < n; j++ {
		x := c.blockHash(parent, j, h.blockSize)
		s := h.table.get(x)
		if s < 0 || h.ent[s].readyS > nowS {
			break
		}
		l.slots, l.hashes = append(l.slots, s), append(l.hashes, x)
		parent = x
	}
}

// evictable reports whether slot s may be dropped now.
func (h *hostTier) evictable(s int32, nowS float64) bool {
	return h.ent[s].loads == 0 && h.ent[s].readyS <= nowS
}

// store takes slots for hashes, which the tier lacks and which are
// distinct, evicting least recently used blocks for room, queues their
// copies for the batch in flight and appends the slots to out. It reports
// false, changing nothing, when too few blocks can be evicted.
func (h *hostTier) store(hashes []uint64, nowS float64, out []int32) ([]int32, bool) {
	evict := len(hashes) - len(h.free)
	if evict > 0 {
		n := 0
		for s := h.head; s >= 0 && n < evict; s = h.ent[s].next {
			if h.evictable(s, nowS) {
				n++
			}
		}
		if n < evict {
			return out, false
		}
		for s := h.head; evict > 0; {
			nx := h.ent[s].next
			if h.evictable(s, nowS) {
				h.unlink(s)
				h.table.remove(h.ent[s].hash)
				h.ent[s].hash = 0
				h.free = append(h.free, s)
				h.evictions++
				evict--
			}
			s = nx
		}
	}
	for _, x := range hashes {
		s := h.free[len(h.free)-1]
		h.free = h.free[:len(h.free)-1]
		h.ent[s].hash, h.ent[s].readyS = x, math.Inf(1)
		h.table.set(x, s)
		h.pushTail(s)
		h.pending = append(h.pending, s)
		h.stored++
		out = append(out, s)
	}
	return out, true
}

// issue starts the copies of the pending slots at endS, when the batch
// that stored them ends: one after another over the GPU-to-host link.
func (h *hostTier) issue(endS float64) {
	if len(h.pending) == 0 {
		return
	}
	t := max(h.d2hFreeS, endS) + float64(len(h.pending))*h.blockBytes/h.bytesPerS
	for _, s := range h.pending {
		h.ent[s].readyS = t
	}
	h.d2hFreeS = t
	h.pending = h.pending[:0]
}

// hostLoad is one request's load from the host tier in flight: the slots
// it reads, the bytes one GPU has left to copy (the host link drains it),
// and the tokens it will have computed when done (GPU and host hits).
type hostLoad struct {
	slots  []int32
	bytes  float64
	tokens int32
	// The lookup that found slots: their hashes, the first block, its
	// parent's hash and the tier's evictions then (lookup).
	hashes    []uint64
	from      int32
	parent    uint64
	evictions int64 // the tier's evictions at the lookup
}

// reset forgets the lookup, keeping the buffers.
func (l *hostLoad) reset() {
	*l = hostLoad{slots: l.slots[:0], hashes: l.hashes[:0], from: -1}
}
