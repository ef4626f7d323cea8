package runresult

// SpeculativeReport is a run's speculative decoding: what it drew from and
// what it measured, as vLLM reports it (vllm/v1/spec_decode/metrics.py,
// SpecDecodingStats and SpecDecodingLogging): a draft is one request's
// draft tokens verified in one step; the draft acceptance rate is accepted
// / draft tokens; the mean acceptance length is 1 + accepted / drafts (the
// bonus token included); the per-position acceptance rate is the drafts
// whose position i was accepted / drafts.
type SpeculativeReport struct {
	Method               string `json:"method"`
	NumSpeculativeTokens int    `json:"num_speculative_tokens"`
	// Acceptance is the per-position acceptance rate the run drew from;
	// AcceptanceRecord the record it came from ("" when given), and
	// AcceptanceSource that record's source.
	Acceptance       []float64 `json:"acceptance"`
	AcceptanceRecord string    `json:"acceptance_record,omitempty"`
	AcceptanceSource string    `json:"acceptance_source"`
	// Drafter says what the drafter runs and how it is priced;
	// DrafterExecutionMode how its passes are launched ("" for ngram).
	Drafter              string `json:"drafter"`
	DrafterExecutionMode string `json:"drafter_execution_mode,omitempty"`
	// DrafterWeightBytes and DrafterKVBytesPerToken are its memory on one
	// GPU (part of the memory report's weights and KV bytes per token).
	DrafterWeightBytes     int64 `json:"drafter_weight_bytes"`
	DrafterKVBytesPerToken int64 `json:"drafter_kv_bytes_per_token"`

	Drafts                    int64     `json:"num_drafts"`
	DraftTokens               int64     `json:"num_draft_tokens"`
	AcceptedTokens            int64     `json:"num_accepted_tokens"`
	AcceptedPerPosition       []int64   `json:"num_accepted_tokens_per_pos"`
	DraftAcceptanceRate       float64   `json:"draft_acceptance_rate"`
	MeanAcceptanceLength      float64   `json:"mean_acceptance_length"`
	AcceptanceRatePerPosition []float64 `json:"acceptance_rate_per_position"`
}

// Add adds an engine's counts to r and recomputes the rates.
func (r *SpeculativeReport) Add(drafts, draftTokens, accepted int64, perPos []int64) {
	r.Drafts += drafts
	r.DraftTokens += draftTokens
	r.AcceptedTokens += accepted
	if len(r.AcceptedPerPosition) < len(perPos) {
		r.AcceptedPerPosition = append(r.AcceptedPerPosition, make([]int64, len(perPos)-len(r.AcceptedPerPosition))...)
	}
	for i, n := range perPos {
		r.AcceptedPerPosition[i] += n
	}
	r.DraftAcceptanceRate, r.MeanAcceptanceLength = 0, 0
	r.AcceptanceRatePerPosition = r.AcceptanceRatePerPosition[:0]
	if r.DraftTokens > 0 {
		r.DraftAcceptanceRate = float64(r.AcceptedTokens) / float64(r.DraftTokens)
	}
	if r.Drafts > 0 {
		r.MeanAcceptanceLength = 1 + float64(r.AcceptedTokens)/float64(r.Drafts)
		for _, n := range r.AcceptedPerPosition {
			r.AcceptanceRatePerPosition = append(r.AcceptanceRatePerPosition, float64(n)/float64(r.Drafts))
		}
	}
}
