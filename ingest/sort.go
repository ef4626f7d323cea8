package ingest

import (
	"cmp"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// The samples of a file are ordered by operator, model, the rest of the
// key, variant and conditions, features, source and line. Sorting compares
// ranks of the few distinct strings instead of the strings themselves, so
// that tens of thousands of samples sort in milliseconds.

// keyID is the string part of a sample's order: model and predictor key.
type keyID struct {
	model string
	key   spec.OpKey
}

// condID is the variant and conditions of a sample.
type condID struct{ variant, cond string }

// sortItem is a record with its precomputed order: key and conditions,
// features, then source and line.
type sortItem struct {
	primary, secondary uint64
	nf                 int
	f                  [3]float64
	rec                *record
}

// sortRecords orders the samples of one file in place.
func sortRecords(recs []*record) {
	keys := map[keyID]uint32{}
	conds := map[condID]uint32{}
	srcs := map[string]uint32{}
	for _, r := range recs {
		keys[keyID{r.Model, r.Key}] = 0
		conds[condID{r.Variant, r.cond}] = 0
		srcs[r.Source] = 0
	}
	rankKeys(keys, func(a, b keyID) int {
		ka, kb := a.key, b.key
		return cmp.Or(
			strings.Compare(ka.Op, kb.Op),
			strings.Compare(a.model, b.model),
			strings.Compare(ka.Measurement, kb.Measurement),
			cmp.Compare(ka.TP, kb.TP),
			cmp.Compare(ka.EP, kb.EP),
			cmp.Compare(ka.LocalExperts, kb.LocalExperts),
			strings.Compare(ka.GatingContext, kb.GatingContext),
			strings.Compare(ka.RoutingPath, kb.RoutingPath),
			cmp.Compare(ka.Workers, kb.Workers),
		)
	})
	rankKeys(conds, func(a, b condID) int {
		return cmp.Or(strings.Compare(a.variant, b.variant), strings.Compare(a.cond, b.cond))
	})
	rankKeys(srcs, strings.Compare)
	items := make([]sortItem, len(recs))
	for i, r := range recs {
		it := &items[i]
		it.primary = uint64(keys[keyID{r.Model, r.Key}])<<32 | uint64(conds[condID{r.Variant, r.cond}])
		it.secondary = uint64(srcs[r.Source])<<32 | uint64(uint32(r.Line))
		it.nf = copy(it.f[:], r.Features)
		it.rec = r
	}
	slices.SortFunc(items, func(a, b sortItem) int {
		if a.primary != b.primary {
			return cmp.Compare(a.primary, b.primary)
		}
		if a.nf != b.nf {
			return cmp.Compare(a.nf, b.nf)
		}
		for j := 0; j < a.nf; j++ {
			if a.f[j] != b.f[j] {
				return cmp.Compare(a.f[j], b.f[j])
			}
		}
		return cmp.Compare(a.secondary, b.secondary)
	})
	for i := range items {
		recs[i] = items[i].rec
	}
}

// rankKeys sets every key's value to its rank in the order of compare.
func rankKeys[K comparable](m map[K]uint32, compare func(a, b K) int) {
	ks := make([]K, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, compare)
	for i, k := range ks {
		m[k] = uint32(i)
	}
}
