package fit

import (
	"fmt"
	"math"
	"slices"

	"github.com/ftk-dev/ftk/bundle"
)

// groupRatios compares every sweep group of rows with the primary one (the
// single-sequence "pure" rows, else the largest group): a forest of the
// primary rows predicts the group's rows that lie inside the primary
// domain. It returns the primary group's name, and no ratios when there is
// one group.
func groupRatios(si shapeInfo, rows []Row, seed uint64) (string, []bundle.GroupRatio, error) {
	groups := map[string][]Row{}
	var names []string
	for _, r := range rows {
		if _, ok := groups[r.Group]; !ok {
			names = append(names, r.Group)
		}
		groups[r.Group] = append(groups[r.Group], r)
	}
	if len(names) < 2 {
		return "", nil, nil
	}
	slices.Sort(names)
	primary := bundle.PrimaryGroup
	if _, ok := groups[primary]; !ok {
		primary = names[0]
		for _, g := range names {
			if len(groups[g]) > len(groups[primary]) {
				primary = g
			}
		}
	}
	ref, err := trainModel(si, groups[primary], bundle.TargetLogRatio, bundle.ForestParams{Trees: 32, MaxDepth: 24, MinLeaf: 1, MaxFeatures: 1, Seed: seed}, 0)
	if err != nil {
		return "", nil, err
	}
	dom := domainOf(groups[primary], len(si.names))
	var out []bundle.GroupRatio
	for _, g := range names {
		if g == primary {
			continue
		}
		var ratios []float64
		for _, r := range groups[g] {
			if inside(dom, r.X) {
				ratios = append(ratios, r.TimeMs/ref.Predict(r.X))
			}
		}
		slices.Sort(ratios)
		out = append(out, bundle.GroupRatio{Group: g, Rows: len(groups[g]), Ratio: quantile(ratios, 0.5)})
	}
	return primary, out, nil
}

// firstLines names the source lines of the first rows, for messages.
func firstLines(rows []Row) []string {
	var out []string
	for i, r := range rows {
		if i == 3 {
			out = append(out, fmt.Sprintf("and %d more", len(rows)-3))
			break
		}
		out = append(out, fmt.Sprintf("%s:%d", r.Source, r.Line))
	}
	return out
}

// domainOf returns the range of every feature over rows.
func domainOf(rows []Row, d int) [][2]float64 {
	dom := make([][2]float64, d)
	for j := range dom {
		dom[j] = [2]float64{math.Inf(1), math.Inf(-1)}
	}
	for _, r := range rows {
		for j, v := range r.X {
			dom[j][0], dom[j][1] = math.Min(dom[j][0], v), math.Max(dom[j][1], v)
		}
	}
	return dom
}

func inside(dom [][2]float64, x []float64) bool {
	for j, v := range x {
		if v < dom[j][0] || v > dom[j][1] {
			return false
		}
	}
	return true
}

// quantile returns the q-quantile of sorted v by linear interpolation
// between closest ranks (numpy's default); NaN for no values.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	i := int(math.Floor(pos))
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}
