package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/bundle"
)

// ConflictRatio is how far apart (as a ratio) two measurements of the same
// thing may be before fit treats them as conflicting: 25%.
const ConflictRatio = 1.25

// resolveConflicts decides which rows of one predictor to train on. Two
// kinds of rows would make the same features mean two different times, and
// no feature can tell them apart at prediction time:
//
//  1. Repeated measurements of one shape more than ConflictRatio slower
//     than the fastest one (two profiler runs merged into one file, one
//     with extra launch or host overhead): the fastest is the least
//     perturbed measurement, and replicates within the ratio stay.
//  2. A group (ingest's variant: mixed-batch or true-mixed reductions) whose
//     times disagree with the single-sequence ("pure") rows: a forest of
//     the pure rows predicts the group's rows that lie inside the pure
//     domain, and the group is kept only when the median ratio of measured
//     to predicted time is within ConflictRatio. A group with no row inside
//     that domain cannot be checked and is left out.
//
// Without pure rows the largest group is the primary one.
func resolveConflicts(si shapeInfo, rows []Row, seed uint64) (kept []Row, dropped []bundle.Dropped, err error) {
	groups := map[string][]Row{}
	var names []string
	for _, r := range rows {
		if _, ok := groups[r.Group]; !ok {
			names = append(names, r.Group)
		}
		groups[r.Group] = append(groups[r.Group], r)
	}
	slices.Sort(names)
	for _, g := range names {
		var d *bundle.Dropped
		groups[g], d = fastestDuplicates(g, groups[g])
		if d != nil {
			dropped = append(dropped, *d)
		}
	}
	if len(names) == 1 {
		return groups[names[0]], dropped, nil
	}
	primary := bundle.PrimaryGroup
	if _, ok := groups[primary]; !ok {
		primary = names[0]
		for _, g := range names {
			if len(groups[g]) > len(groups[primary]) {
				primary = g
			}
		}
	}
	keep := map[string]bool{primary: true}
	ref, err := trainModel(si, groups[primary], bundle.TargetLogRatio, bundle.ForestParams{Trees: 32, MaxDepth: 24, MinLeaf: 1, MaxFeatures: 1, Seed: seed}, 0)
	if err != nil {
		return nil, nil, err
	}
	dom := domainOf(groups[primary], len(si.names))
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
		ratio := math.NaN()
		if len(ratios) > 0 {
			slices.Sort(ratios)
			ratio = quantile(ratios, 0.5)
			if ratio <= ConflictRatio && ratio >= 1/ConflictRatio {
				keep[g] = true
				continue
			}
		}
		dropped = append(dropped, bundle.Dropped{Reason: bundle.DropGroup, Group: g, Rows: len(groups[g]), Ratio: ratio, Lines: firstLines(groups[g])})
	}
	for _, g := range names {
		if keep[g] {
			kept = append(kept, groups[g]...)
		}
	}
	return kept, dropped, nil
}

// fastestDuplicates drops, of every shape measured more than once, the
// samples more than ConflictRatio slower than the fastest sample of that
// shape; replicates within the ratio are kept (their noise averages out).
func fastestDuplicates(group string, rows []Row) ([]Row, *bundle.Dropped) {
	fastest := map[string]float64{}
	for _, r := range rows {
		k := shapeKey(r.X)
		if t, ok := fastest[k]; !ok || r.TimeMs < t {
			fastest[k] = r.TimeMs
		}
	}
	var kept, gone []Row
	var ratios []float64
	for _, r := range rows {
		f := fastest[shapeKey(r.X)]
		if r.TimeMs > ConflictRatio*f {
			gone = append(gone, r)
			ratios = append(ratios, r.TimeMs/f)
			continue
		}
		kept = append(kept, r)
	}
	if len(gone) == 0 {
		return rows, nil
	}
	slices.Sort(ratios)
	return kept, &bundle.Dropped{Reason: bundle.DropDuplicate, Group: group, Rows: len(gone), Ratio: quantile(ratios, 0.5), Lines: firstLines(gone)}
}

// shapeKey identifies a feature vector exactly.
func shapeKey(x []float64) string {
	var b strings.Builder
	for _, v := range x {
		fmt.Fprintf(&b, "%x,", math.Float64bits(v))
	}
	return b.String()
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
// between closest ranks (numpy's default).
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
