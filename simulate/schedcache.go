package simulate

import (
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// contentOf is what the prefix cache needs to know of q's tokens.
func contentOf(q *spec.Request) blockContent {
	c := blockContent{uid: uint64(q.ID) + 1, group: q.PrefixGroup, groupTokens: int32(q.PrefixTokens), session: q.Session}
	if len(q.HashIDs) > 0 && q.HashBlockTokens > 0 {
		c.ids, c.idTokens = q.HashIDs, int32(q.HashBlockTokens)
		c.idCovered = int32(min(int64(len(q.HashIDs))*int64(q.HashBlockTokens), int64(q.PromptTokens)))
	}
	return c
}

// allocateCached grows r's blocks to hold tokens tokens through the prefix
// cache, first taking the cached blocks hits (whose last has hash
// hitHash) of a newly scheduled request; the blocks the first cache of
// them fill are cached.
func (s *scheduler) allocateCached(r *reqState, tokens, cache int32, hits []int32, hitHash uint64) bool {
	if !s.pc.allocateLocal(&r.kv, &r.content, hits, hitHash, tokens, cache, s.localBlocks(tokens)) {
		s.pc.stored = s.pc.stored[:0]
		return false
	}
	if s.host != nil {
		s.storeComputed(hits)
	}
	r.blocks = int32(len(r.kv.ids) + len(r.kv.local))
	s.freeBlocks = s.pc.numFree()
	if u := s.usedBlocks(); u > s.peakUsedBlocks {
		s.peakUsedBlocks = u
	}
	return true
}

// countLookup records the lookup that found hit tokens of r cached, now
// that r is scheduled.
func (s *scheduler) countLookup(r *reqState, hit int32) {
	st := &s.pcStats
	if r.cachedPrompt < 0 {
		r.cachedPrompt = hit
		st.Requests++
		st.QueriedTokens += int64(r.prompt)
		st.HitTokens += int64(hit)
		return
	}
	st.PreemptedLookups++
	st.PreemptedQueriedTokens += int64(r.numTokens())
	st.PreemptedHitTokens += int64(hit)
}

// prefixCacheStats returns the engine's lookups so far.
func (s *scheduler) prefixCacheStats() runresult.PrefixCacheStats {
	st := s.pcStats
	if s.pc != nil {
		st.Enabled = true
		st.Evictions = s.pc.evictions
	}
	if h := s.host; h != nil {
		st.HostTier = true
		st.HostStoredBlocks, st.HostEvictions = h.stored, h.evictions
	}
	return st
}
