package fit

import "github.com/ftk-dev/ftk/spec"

// maxFeatures bounds the base and forest features of one predictor, so
// prediction needs no allocation.
const maxFeatures = 8

// featureSet maps an operator's base features (spec.OpFeatures) to the
// features its forest splits on. A nil engineer is the identity; only such
// forests compile into an exact lookup grid.
type featureSet struct {
	names    []string
	engineer func(x []float64, out *[maxFeatures]float64)
}

// forestFeatures decides the forest features of operator op. The forest
// learns the log ratio of the time to the physical fallback, and the
// fallback already carries the physics (chunk x context and chunk^2 for
// prefill attention, batch x context for decode, FLOPs and bytes for
// GEMMs), so the base features suffice and keep the forest grid-exact:
//
//	linear and element-wise ops  num_tokens
//	prefill attention            kv_cache_size, prefill_chunk_size
//	decode attention             batch_size, kv_cache_size
//	MoE grouped GEMM             total_routed_tokens, max_expert_tokens
//	collectives                  size_bytes
//	host overhead                batch_size, num_prefill_tokens, num_decode_tokens
func forestFeatures(op string) featureSet {
	return featureSet{names: spec.OpFeatures(op)}
}

// apply returns the forest features of x in out's storage.
func (fs featureSet) apply(x []float64, out *[maxFeatures]float64) []float64 {
	if fs.engineer == nil {
		return x
	}
	fs.engineer(x, out)
	return out[:len(fs.names)]
}
