package bundle

import "github.com/ftk-dev/ftk/spec"

// MaxFeatures bounds the base and forest features of one predictor, so
// prediction needs no allocation.
const MaxFeatures = 8

// FeatureSet maps an operator's base features (spec.OpFeatures) to the
// features its forest splits on. A nil engineer is the identity; only such
// forests compile into an exact lookup grid.
type FeatureSet struct {
	names    []string
	engineer func(x []float64, out *[MaxFeatures]float64)
}

// ForestFeatures decides the forest features of operator op. The forest
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
func ForestFeatures(op string) FeatureSet {
	return FeatureSet{names: spec.OpFeatures(op)}
}

// Apply returns the forest features of x in out's storage.
func (fs FeatureSet) Apply(x []float64, out *[MaxFeatures]float64) []float64 {
	if fs.engineer == nil {
		return x
	}
	fs.engineer(x, out)
	return out[:len(fs.names)]
}

// Names are the forest features.
func (fs FeatureSet) Names() []string { return fs.names }
