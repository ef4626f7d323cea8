package bundle

import (
	"cmp"
	"fmt"

	"github.com/ftk-dev/ftk/spec"
)

// SameShape reports whether the operator of key a has the same per-GPU
// shape in model m as that of key b (keys differing in TP): replicated ops
// such as the layer norms, the embedding and the MoE router are profiled
// at TP=1 only (docs/formats.md) and cost the same at every TP.
func SameShape(m *spec.Model, a, b spec.OpKey) bool {
	if m == nil || a.Op != b.Op {
		return false
	}
	oa, _ := OpShape(m, a)
	ob, _ := OpShape(m, b)
	return oa != nil && ob != nil && *oa == *ob
}

// Lookup returns the predictor of key k, or, when the bundle has none at
// k's TP, one at another TP whose operator has the same per-GPU shape in
// model m (see SameShape; the lowest TP wins).
func (b *Bundle) Lookup(m *spec.Model, k spec.OpKey) (*Predictor, bool) {
	if p, ok := b.Predictor(k); ok {
		return p, true
	}
	if k.Measurement == "" {
		k.Measurement = b.meta.Measurement
	}
	for _, c := range b.keys {
		if c.TP != k.TP && MatchesAnyTP(k, c) && c.EP == k.EP && c.LocalExperts == k.LocalExperts &&
			c.GatingContext == k.GatingContext && c.RoutingPath == k.RoutingPath && c.Workers == k.Workers && SameShape(m, k, c) {
			return b.preds[c], true
		}
	}
	return nil, false
}

// OpShape finds the per-GPU shape of the operator of key k in model m, or
// says why there is none.
func OpShape(m *spec.Model, k spec.OpKey) (*spec.Op, string) {
	if m == nil {
		return nil, "no model given: fallback on the raw features"
	}
	l := spec.Layout{TP: k.TP, EP: max(k.EP, 1)}
	switch k.Op {
	case spec.OpEPDispatch, spec.OpEPCombine: // keyed by group size, not EP
		l.EP = max(k.Workers, 1)
		l.DP = max(1, l.EP/max(l.TP, 1))
	case spec.OpSendRecv: // only between pipeline stages
		l.PP = 2
	}
	var cands []spec.Op
	for _, i := range []int{0, m.NumLayers - 1} {
		cands = append(cands, spec.LayerOps(m, l, i)...)
	}
	first, last, between := spec.ModelOps(m, l)
	cands = append(cands, first...)
	cands = append(cands, last...)
	if between != nil {
		cands = append(cands, *between)
	}
	for _, o := range cands {
		if o.Name == k.Op {
			// The key's conditions override the layout's where the
			// operator has them.
			if k.LocalExperts > 0 && o.LocalExperts > 0 {
				o.LocalExperts = k.LocalExperts
			}
			if k.Workers > 0 && o.Workers > 0 {
				o.Workers = k.Workers
			}
			return &o, ""
		}
	}
	return nil, fmt.Sprintf("%s is not an operator of %s at TP=%d: fallback on the raw features", k.Op, m.Name, k.TP)
}

// MatchesAnyTP reports whether predictor key k can answer the needed key
// at some TP: every condition the need sets agrees.
func MatchesAnyTP(need, k spec.OpKey) bool {
	switch {
	case need.Op != k.Op, need.Measurement != k.Measurement:
		return false
	case need.EP != 0 && need.EP != k.EP,
		need.LocalExperts != 0 && need.LocalExperts != k.LocalExperts,
		need.GatingContext != "" && need.GatingContext != k.GatingContext,
		need.RoutingPath != "" && need.RoutingPath != k.RoutingPath,
		need.Workers != 0 && need.Workers != k.Workers:
		return false
	}
	return true
}

// CompareKeys orders operator keys by operator, then measurement, TP and
// the remaining conditions.
func CompareKeys(a, b spec.OpKey) int {
	return cmp.Or(
		cmp.Compare(a.Op, b.Op),
		cmp.Compare(a.Measurement, b.Measurement),
		cmp.Compare(a.TP, b.TP),
		cmp.Compare(a.EP, b.EP),
		cmp.Compare(a.LocalExperts, b.LocalExperts),
		cmp.Compare(a.GatingContext, b.GatingContext),
		cmp.Compare(a.RoutingPath, b.RoutingPath),
		cmp.Compare(a.Workers, b.Workers),
	)
}
