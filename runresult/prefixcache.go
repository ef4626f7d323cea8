package runresult

// PrefixCacheStats are a run's prefix-cache lookups (summed over engines).
// A request is looked up when it is first scheduled: its prompt tokens are
// queried and HitTokens of them were cached (whole blocks, at most the
// prompt less one token, which is always computed). A preempted request is
// looked up again when rescheduled, over its prompt and the output tokens
// it had; those lookups are counted apart. vLLM's "prefix cache hit rate"
// (vllm/v1/core/kv_cache_manager.py get_computed_blocks: queries +=
// num_tokens, hits += cached tokens) counts every lookup, including a
// request's repeated lookups while it waits for free blocks; ftk counts
// each request's first scheduled lookup once.
type PrefixCacheStats struct {
	Enabled       bool    `json:"enabled"`
	Requests      int64   `json:"requests"`
	QueriedTokens int64   `json:"queried_tokens"`
	HitTokens     int64   `json:"hit_tokens"`
	HitRate       float64 `json:"hit_rate"`
	// Lookups of preempted requests, when rescheduled.
	PreemptedLookups       int64 `json:"preempted_lookups"`
	PreemptedQueriedTokens int64 `json:"preempted_queried_tokens"`
	PreemptedHitTokens     int64 `json:"preempted_hit_tokens"`
	// Evictions is cached blocks taken for new content.
	Evictions int64 `json:"evictions"`
	// With a host tier (kv_offloading_size, docs/kv-offloading.md):
	// HostHitTokens and PreemptedHostHitTokens are the tokens a lookup
	// found there beyond the GPU's hits (loaded over the host link, not
	// recomputed; HitTokens counts the GPU's alone); HostHitRate is
	// HostHitTokens over QueriedTokens; HostLoadedBlocks, HostStoredBlocks
	// and HostEvictions count blocks copied to the GPU, blocks copied to
	// the host and host blocks dropped for new ones.
	HostTier               bool    `json:"host_tier,omitempty"`
	HostHitTokens          int64   `json:"host_hit_tokens,omitempty"`
	HostHitRate            float64 `json:"host_hit_rate,omitempty"`
	PreemptedHostHitTokens int64   `json:"preempted_host_hit_tokens,omitempty"`
	HostLoadedBlocks       int64   `json:"host_loaded_blocks,omitempty"`
	HostStoredBlocks       int64   `json:"host_stored_blocks,omitempty"`
	HostEvictions          int64   `json:"host_evictions,omitempty"`
}

// Add sums o into p and recomputes the hit rate.
func (p *PrefixCacheStats) Add(o *PrefixCacheStats) {
	p.Enabled = p.Enabled || o.Enabled
	p.Requests += o.Requests
	p.QueriedTokens += o.QueriedTokens
	p.HitTokens += o.HitTokens
	p.PreemptedLookups += o.PreemptedLookups
	p.PreemptedQueriedTokens += o.PreemptedQueriedTokens
	p.PreemptedHitTokens += o.PreemptedHitTokens
	p.Evictions += o.Evictions
	p.HostTier = p.HostTier || o.HostTier
	p.HostHitTokens += o.HostHitTokens
	p.PreemptedHostHitTokens += o.PreemptedHostHitTokens
	p.HostLoadedBlocks += o.HostLoadedBlocks
	p.HostStoredBlocks += o.HostStoredBlocks
	p.HostEvictions += o.HostEvictions
	p.HitRate, p.HostHitRate = 0, 0
	if p.QueriedTokens > 0 {
		p.HitRate = float64(p.HitTokens) / float64(p.QueriedTokens)
		p.HostHitRate = float64(p.HostHitTokens) / float64(p.QueriedTokens)
	}
}
