package fit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/bundle"
)

// shapes groups rows by feature vector: id[i] is the shape of row i, n the
// number of distinct shapes, numbered in order of first appearance.
func shapes(rows []Row) (id []int, n int) {
	seen := make(map[string]int, len(rows))
	id = make([]int, len(rows))
	for i, r := range rows {
		k := shapeKey(r.X)
		s, ok := seen[k]
		if !ok {
			s = len(seen)
			seen[k] = s
		}
		id[i] = s
	}
	return id, len(seen)
}

// shapeKey identifies a feature vector exactly.
func shapeKey(x []float64) string {
	var b strings.Builder
	for _, v := range x {
		fmt.Fprintf(&b, "%x,", math.Float64bits(v))
	}
	return b.String()
}

// medianRows collapses the measurements of every shape into one row with
// their median time (bundle.RepeatsMedian); the row keeps the first measurement's
// source line and group.
func medianRows(rows []Row) []Row {
	id, n := shapes(rows)
	if n == len(rows) {
		return rows
	}
	times := make([][]float64, n)
	first := make([]int, n)
	for i := len(rows) - 1; i >= 0; i-- {
		first[id[i]] = i
	}
	for i, s := range id {
		times[s] = append(times[s], rows[i].TimeMs)
	}
	out := make([]Row, n)
	for s := range out {
		slices.Sort(times[s])
		out[s] = rows[first[s]]
		out[s].TimeMs = quantile(times[s], 0.5)
	}
	return out
}

// groupedFolds deals the shapes of rows into k folds (a permutation of the
// shapes drawn from seed, dealt round-robin) and gives every row its
// shape's fold, so the repeats of one shape never sit on both sides of a
// split. With fewer shapes than k, each shape is its own fold.
func groupedFolds(rows []Row, k int, seed uint64) []int {
	id, n := shapes(rows)
	perm := rand.New(rand.NewPCG(seed, 0x666f6c6473)).Perm(n)
	shapeFold := make([]int, n)
	for pos, s := range perm {
		shapeFold[s] = pos % k
	}
	folds := make([]int, len(rows))
	for i, s := range id {
		folds[i] = shapeFold[s]
	}
	return folds
}

// repeatStats computes the Repeats of rows with positive times.
func repeatStats(rows []Row) bundle.Repeats {
	id, n := shapes(rows)
	rep := bundle.Repeats{Shapes: n, MedianSpread: 1}
	times := make([][]float64, n)
	for i, s := range id {
		times[s] = append(times[s], rows[i].TimeMs)
	}
	var spreads, bad []float64
	var sum float64
	var badRows []Row
	for s, t := range times {
		if len(t) < 2 {
			continue
		}
		slices.Sort(t)
		rep.Repeated++
		rep.Rows += len(t)
		med := quantile(t, 0.5)
		for _, v := range t {
			sum += math.Abs(v-med) / v
		}
		sp := t[len(t)-1] / t[0]
		spreads = append(spreads, sp)
		if sp > bundle.DisagreeRatio {
			bad = append(bad, sp)
			for i, si := range id {
				if si == s && len(badRows) < 4 {
					badRows = append(badRows, rows[i])
				}
			}
		}
	}
	if len(rows) > 0 {
		rep.NoiseFloorPct = 100 * sum / float64(len(rows))
	}
	if len(spreads) > 0 {
		slices.Sort(spreads)
		rep.MedianSpread = quantile(spreads, 0.5)
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		rep.Disagreeing, rep.DisagreeSpread, rep.Lines = len(bad), quantile(bad, 0.5), firstLines(badRows)
	}
	return rep
}
