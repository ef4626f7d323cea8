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
	p.HitRate = 0
	if p.QueriedTokens > 0 {
		p.HitRate = float64(p.HitTokens) / float64(p.QueriedTokens)
	}
}
