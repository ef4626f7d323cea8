package spec

import "math"

// Batch reductions: how a batch of many sequences becomes the few features
// an attention predictor reads. The reductions keep the cost terms of
// attention, so one equivalent sequence costs what the batch costs.

// PrefillEquivalent reduces prefill chunks c_i on top of cached contexts k_i
// to one sequence (kv, chunk) with chunk^2 = sum c_i^2 and
// chunk*kv = sum c_i*k_i: the causal term (c^2/2) and the context term
// (c*k) of attention FLOPs are both preserved.
func PrefillEquivalent(chunks, contexts []int) (kv, chunk float64) {
	var sq, ck float64
	for i, c := range chunks {
		sq += float64(c) * float64(c)
		ck += float64(c) * float64(contexts[i])
	}
	if sq == 0 {
		return 0, 0
	}
	chunk = math.Sqrt(sq)
	return ck / chunk, chunk
}

// DecodeEquivalent reduces decode sequences with contexts k_i to
// (batch, mean context): decode attention reads every cached token once, so
// its cost follows batch x mean context = sum k_i.
func DecodeEquivalent(contexts []int) (batch, kv float64) {
	if len(contexts) == 0 {
		return 0, 0
	}
	var s float64
	for _, k := range contexts {
		s += float64(k)
	}
	return float64(len(contexts)), s / float64(len(contexts))
}
