package collect

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Gap is a part of the query domain a plan leaves unsampled: for one
// predictor key and feature, the range wanted and the range the plan's
// shapes span (NaN when no shape measures the key at all).
type Gap struct {
	Key     spec.OpKey
	Feature string
	Want    spec.Range
	Got     spec.Range
}

// String says what is missing, for people.
func (g Gap) String() string {
	if math.IsNaN(g.Got.Min) {
		return fmt.Sprintf("%s: no shape measures it (wanted %s in [%g, %g])", g.Key, g.Feature, g.Want.Min, g.Want.Max)
	}
	return fmt.Sprintf("%s: %s sampled over [%g, %g], simulation asks [%g, %g]", g.Key, g.Feature, g.Got.Min, g.Got.Max, g.Want.Min, g.Want.Max)
}

// CheckCoverage compares the shapes with spec.QueryDomain for every layout
// and returns what they leave out. Attention predictors count only
// single-sequence prefill rows and equal-context decode rows, whose
// features a reader takes as they stand.
func CheckCoverage(shapes []Shape, m *spec.Model, layouts []spec.Layout, lim spec.EngineLimits) []Gap {
	var gaps []Gap
	for _, l := range layouts {
		for _, e := range spec.QueryDomain(m, l, lim) {
			got := make([]spec.Range, len(e.Ranges))
			for i := range got {
				got[i] = spec.Range{Min: math.Inf(1), Max: math.Inf(-1)}
			}
			n := 0
			for si := range shapes {
				s := &shapes[si]
				o := s.Op(e.Key.Op)
				if o == nil || !keyMatches(e.Key, s, o) {
					continue
				}
				n++
				for i, v := range s.Features(o) {
					got[i].Min = math.Min(got[i].Min, v)
					got[i].Max = math.Max(got[i].Max, v)
				}
			}
			feats := spec.OpFeatures(e.Key.Op)
			for i, want := range e.Ranges {
				g := got[i]
				if n == 0 {
					g = spec.Range{Min: math.NaN(), Max: math.NaN()}
				}
				if n == 0 || g.Min > want.Min || g.Max < want.Max {
					gaps = append(gaps, Gap{Key: e.Key, Feature: feats[i], Want: want, Got: g})
				}
			}
		}
	}
	return gaps
}

func keyMatches(k spec.OpKey, s *Shape, o *spec.Op) bool {
	switch {
	case o.Family == spec.FamilyCollective && o.Workers != k.Workers:
		return false
	case o.Name == spec.OpAttnPrefill && s.Kind != KindPrefill:
		return false
	case o.Name == spec.OpAttnDecode && s.Kind != KindDecode:
		return false
	}
	if s.Layout.TP != k.TP {
		return false
	}
	if k.EP > 0 && (s.Layout.EP != k.EP || o.LocalExperts != k.LocalExperts) {
		return false
	}
	if k.GatingContext != "" && s.GatingContext != k.GatingContext {
		return false
	}
	return true
}
