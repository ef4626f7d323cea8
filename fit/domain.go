package fit

import (
	"slices"

	"github.com/ftk-dev/ftk/bundle"
)

// maxDomainValues bounds the sampled values kept per feature.
const maxDomainValues = 1024

// featureDomains computes the domain of rows.
func featureDomains(names []string, rows []Row) []bundle.FeatureDomain {
	out := make([]bundle.FeatureDomain, len(names))
	for j, n := range names {
		vals := make([]float64, len(rows))
		for i, r := range rows {
			vals[i] = r.X[j]
		}
		slices.Sort(vals)
		uniq := vals[:0]
		for i, v := range vals {
			if i == 0 || v != uniq[len(uniq)-1] {
				uniq = append(uniq, v)
			}
		}
		if len(uniq) > maxDomainValues {
			thin := make([]float64, 0, maxDomainValues)
			for k := 0; k < maxDomainValues; k++ {
				thin = append(thin, uniq[k*(len(uniq)-1)/(maxDomainValues-1)])
			}
			uniq = thin
		}
		out[j] = bundle.FeatureDomain{Name: n, Min: uniq[0], Max: uniq[len(uniq)-1], Values: append([]float64(nil), uniq...)}
	}
	return out
}
