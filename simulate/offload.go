package simulate

import "github.com/ftk-dev/ftk/runresult"

// The scheduler's side of the host tier (hostTier). A newly scheduled
// request whose prefix continues in the host tier beyond its GPU hits
// loads those blocks as vLLM's OffloadingConnector does
// (get_num_new_matched_tokens returns them with load_kv_async): the
// scheduler allocates GPU blocks for its hits and the blocks to load, the
// request leaves the waiting queue without taking budget or a running
// seat (vLLM's WAITING_FOR_REMOTE_KVS), and the copy runs over the
// host-to-GPU direction of the host link while other requests compute
// (loads in flight share it). When the copy ends the loaded blocks are
// cached on the GPU and the request is scheduled at the next step
// (_update_waiting_for_remote_kv), computing only the rest: the load
// overlaps other requests' steps, never its own prefill.

// addHostTier gives engine e a host tier of mem.HostBlocks blocks and its
// host link.
func addHostTier(loop *Loop, e *engine, mem *runresult.MemoryReport) {
	s := e.sched
	s.pc.collect = true
	s.pc.hostSlot = make([]int32, len(s.pc.ref))
	for b := range s.pc.hostSlot {
		s.pc.hostSlot[b] = -1
	}
	bytesPerS := mem.HostLinkGBps * 1e9
	s.host = newHostTier(mem.HostBlocks, mem.BlockSize, float64(mem.KVBytesPerToken*int64(mem.BlockSize)), bytesPerS)
	s.hostLink = &kvLink{id: e.id, loop: loop, bytesPerS: bytesPerS,
		done:      func(slot int32, nowS float64) { s.loaded(slot); e.kick(nowS) },
		remaining: func(slot int32) *float64 { return &s.reqs[slot].load.bytes }}
}

// startLoad looks up the request in slot, newly scheduled with s.hits
// (last hash hitHash) on the GPU, in the host tier. It reports started
// when a load began, and ok false when the request has host hits but too
// few GPU blocks are free for them (nothing changed but the touches).
func (s *scheduler) startLoad(slot int32, hitHash uint64) (started, ok bool) {
	r := &s.reqs[slot]
	h := s.host
	bs := int32(s.cfg.BlockSize)
	gpu := int32(len(s.hits))
	h.lookup(&r.content, hitHash, gpu, (r.numTokens()-1)/bs, s.nowS, &r.load)
	n := int32(len(r.load.slots))
	if n == 0 {
		return false, true
	}
	tokens := (gpu + n) * bs
	if !s.pc.allocateLocal(&r.kv, &r.content, s.hits, hitHash, tokens, gpu*bs, s.localBlocks(tokens)) {
		return false, false // r.load keeps the lookup for the next try
	}
	for i := len(r.load.slots) - 1; i >= 0; i-- {
		h.touch(r.load.slots[i])
	}
	for i := len(s.hits) - 1; i >= 0; i-- {
		if x := s.hostSlotOf(s.hits[i]); x >= 0 {
			h.touch(x)
		}
	}
	r.blocks = int32(len(r.kv.ids) + len(r.kv.local))
	s.freeBlocks = s.pc.numFree()
	if u := s.usedBlocks(); u > s.peakUsedBlocks {
		s.peakUsedBlocks = u
	}
	first := r.cachedPrompt < 0
	s.countLookup(r, gpu*bs)
	if first {
		r.hostCached = n * bs
		s.pcStats.HostHitTokens += int64(n * bs)
	} else {
		s.pcStats.PreemptedHostHitTokens += int64(n * bs)
	}
	for _, x := range r.load.slots {
		h.ent[x].loads++
	}
	r.load.tokens = tokens
	r.load.bytes = float64(n) * h.blockBytes
	s.loading++
	s.hostLink.start(slot, s.nowS)
	return true, true
}

// loaded ends the load of the request in slot: its loaded blocks are
// cached on the GPU and it waits to be scheduled from there.
func (s *scheduler) loaded(slot int32) {
	r := &s.reqs[slot]
	s.loading--
	for _, x := range r.load.slots {
		s.host.ent[x].loads--
	}
	s.pcStats.HostLoadedBlocks += int64(len(r.load.slots))
	s.pc.cacheFull(&r.kv, &r.content, r.load.tokens)
	for k, b := range s.pc.stored { // what was loaded is in the tier already
		s.pc.hostSlot[b] = r.load.slots[k]
	}
	s.pc.stored = s.pc.stored[:0]
	r.computed = r.load.tokens
	r.load.reset()
	s.ready.pushBack(slot)
}

// storeComputed stores in the host tier the blocks the last allocation
// cached on the GPU, as vLLM stores every step's newly full blocks; a
// newly scheduled request's GPU hits (hits) are touched where the tier
// holds them and stored where it does not. The touches of a lookup happen
// when the request is scheduled: vLLM touches at every lookup, also those
// of a request that waits for blocks, which moves its blocks to the same
// end of the list.
func (s *scheduler) storeComputed(hits []int32) {
	p, h := s.pc, s.host
	s.storeHashes, s.storeBlocks = s.storeHashes[:0], s.storeBlocks[:0]
	for i := len(hits) - 1; i >= 0; i-- {
		if x := s.hostSlotOf(hits[i]); x >= 0 {
			h.touch(x)
		} else {
			s.storeHashes, s.storeBlocks = append(s.storeHashes, p.hash[hits[i]]), append(s.storeBlocks, hits[i])
		}
	}
	for _, b := range p.stored {
		if s.hostSlotOf(b) < 0 {
			s.storeHashes, s.storeBlocks = append(s.storeHashes, p.hash[b]), append(s.storeBlocks, b)
		}
	}
	p.stored = p.stored[:0]
	if len(s.storeHashes) == 0 {
		return
	}
	var ok bool
	if s.storeSlots, ok = h.store(s.storeHashes, s.nowS, s.storeSlots[:0]); ok {
		for k, b := range s.storeBlocks {
			p.hostSlot[b] = s.storeSlots[k]
		}
	}
}

// hostSlotOf returns the host tier's slot holding GPU block b's content,
// or -1: the slot last seen holding it when it still does, else the
// table's.
func (s *scheduler) hostSlotOf(b int32) int32 {
	x := s.pc.hash[b]
	if slot := s.pc.hostSlot[b]; slot >= 0 && s.host.ent[slot].hash == x {
		return slot
	}
	// The slot was evicted or taken, or the block was never seen on the
	// host (pop forgets a block's slot when it takes new content).
	slot := s.host.table.get(x)
	s.pc.hostSlot[b] = slot
	return slot
}

// unstick frees the blocks of the last loaded request waiting to be
// scheduled when nothing runs, no load is in flight and nothing could be
// scheduled: loaded requests then hold blocks none of them can grow
// into, and only one giving its blocks back lets the others on. It goes
// back to the waiting queue to recompute as a preempted request would
// (its loaded blocks stay cached on the GPU for its next lookup). vLLM's
// scheduler has no such step; ftk takes it so that such a run ends.
func (s *scheduler) unstick() bool {
	if len(s.running) > 0 || s.loading > 0 || s.ready.len() == 0 {
		return false
	}
	slot := s.ready.popBack()
	r := &s.reqs[slot]
	s.free(r)
	r.computed = 0
	r.preemptions++
	s.preemptions++
	s.waiting.pushFront(slot)
	return true
}
