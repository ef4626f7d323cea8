package spec

import "math"

// Range is a closed interval of one feature.
type Range struct{ Min, Max float64 }

// Contains reports whether v lies in the range.
func (r Range) Contains(v float64) bool { return v >= r.Min && v <= r.Max }

// DomainEntry is what one predictor will be asked: the operator's key
// (measurement type left empty: the caller picks it) and a range per
// feature, in OpFeatures order.
type DomainEntry struct {
	Key    OpKey
	Ranges []Range
}

// ExpertSkewHeadroom bounds the load of the most loaded local expert in the
// query domain: up to this many times the even share of routed tokens
// (capped by the token count). Routing skew beyond it is extrapolation.
const ExpertSkewHeadroom = 4

// QueryDomain derives the feature ranges a simulation of model m on layout l
// within limits will query, per operator of one GPU (docs/design.md section 5). The
// collect planner samples it; fit --check-coverage checks predictors
// against it. Every operator is keyed by the layout's TP; MoE ops by the
// gating context of a real forward pass (prefill_hot).
func QueryDomain(m *Model, l Layout, lim EngineLimits) []DomainEntry {
	l = l.Normalize()
	maxTok := float64(lim.MaxNumBatchedTokens)
	maxLen := float64(lim.MaxModelLen)
	maxSeqs := math.Min(float64(lim.MaxNumSeqs), maxTok)
	h := float64(m.HiddenSize)
	act := 2.0 // BF16 activations
	seen := map[string]bool{}
	var out []DomainEntry
	add := func(k OpKey, r ...Range) {
		if seen[k.String()] {
			return
		}
		seen[k.String()] = true
		out = append(out, DomainEntry{Key: k, Ranges: r})
	}
	tokens := Range{1, maxTok}
	// A data-parallel MoE layout routes every DP rank's tokens through the
	// EP group in one lockstep step (MoEExchanges): the grouped GEMM and
	// the exchange see up to DP x the token budget.
	groupTok := maxTok
	if MoEExchanges(l) {
		groupTok *= float64(l.DP)
	}
	lastLayer := m.NumLayers - 1
	layers := []int{0}
	if m.IsMoELayer(lastLayer) && !m.IsMoELayer(0) {
		layers = append(layers, lastLayer) // DeepSeek: dense first layers, then MoE
	} else if m.IsMoE() {
		layers = []int{lastLayer}
	}
	for _, li := range layers {
		for _, o := range LayerOps(m, l, li) {
			k := OpKey{Op: o.Name, TP: l.TP}
			switch o.Name {
			case OpAttnPrefill:
				add(k, Range{0, maxLen - 1}, Range{1, math.Min(maxTok, maxLen)})
			case OpAttnDecode:
				add(k, Range{1, maxSeqs}, Range{1, maxLen})
			case OpMoEGatingLinear, OpMoERoutingTopK:
				k.GatingContext = GatingPrefillHot
				add(k, tokens)
			case OpMoEShuffling:
				k.EP, k.LocalExperts = l.EP, o.LocalExperts
				add(k, tokens)
			case OpMoEGroupedGEMM:
				k.EP, k.LocalExperts = l.EP, o.LocalExperts
				routed := math.Ceil(groupTok * float64(m.TopK) / float64(l.EP))
				even := groupTok * float64(m.TopK) / float64(m.NumExperts)
				maxExpert := math.Min(groupTok, math.Ceil(ExpertSkewHeadroom*even))
				add(k, Range{1, routed}, Range{1, math.Max(1, maxExpert)})
			case OpAllReduce:
				k.Workers = o.Workers
				add(k, Range{h * act, h * act * maxTok})
			case OpEPDispatch, OpEPCombine:
				// Gathered tokens with their router outputs, or routed
				// copies: at most top-k (or (h + experts) / h) token widths
				// a group token (EPExchange).
				k.Workers = o.Workers
				perToken := math.Max(float64(m.TopK), (h+float64(m.NumExperts))/h)
				add(k, Range{h * act, h * act * groupTok * perToken})
			default:
				add(k, tokens)
			}
		}
	}
	first, last, between := ModelOps(m, l)
	for _, o := range first {
		add(OpKey{Op: o.Name, TP: l.TP}, tokens)
	}
	for _, o := range last { // logits only for the sequences that sample
		add(OpKey{Op: o.Name, TP: l.TP}, Range{1, maxSeqs})
	}
	if between != nil {
		add(OpKey{Op: OpSendRecv, TP: 1, Workers: 2}, Range{h * act, h * act * maxTok})
	}
	return out
}
