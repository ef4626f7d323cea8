package fit

import (
	"math"
	"slices"
	"sort"
)

// maxBins bounds the histogram bins of one feature; bin indices fit a
// uint16. Up to maxBins distinct values every value is a split candidate of
// its own, as in an exact split search: with 256 bins the 993 message sizes
// of the Vidur H100 collective profiles shared bins four at a time, and the
// forest could not tell neighbouring sizes apart (send_recv all-rows error
// 0.89% against scikit-learn's 0.36%).
const maxBins = 4096

// binnedData is a training matrix quantised per feature: bins[f][i] is the
// bin of row i in feature f, and row i falls in bin b of feature f exactly
// when edges[f][b-1] < x <= edges[f][b] (the last bin is open above). A split
// after bin b therefore sends x <= edges[f][b] to the left child.
type binnedData struct {
	bins  [][]uint16
	edges [][]float64
	// lo and hi are the smallest and largest value in each bin. A split
	// between two non-empty bins of a node is placed halfway between the
	// largest value left and the smallest value right, as an exact
	// (unbinned) split search places it.
	lo, hi [][]float64
}

// binEdges returns the split candidates of one feature: the midpoints
// between consecutive distinct values when there are at most maxBins of
// them, else maxBins-1 midpoints at evenly spaced quantiles of the values.
func binEdges(col []float64) []float64 {
	v := slices.Clone(col)
	sort.Float64s(v)
	uniq := slices.Compact(slices.Clone(v))
	if len(uniq) <= maxBins {
		edges := make([]float64, 0, len(uniq)-1)
		for i := 1; i < len(uniq); i++ {
			edges = append(edges, midpoint(uniq[i-1], uniq[i]))
		}
		return edges
	}
	edges := make([]float64, 0, maxBins-1)
	n := len(v)
	for q := 1; q < maxBins; q++ {
		i := max(q*n/maxBins, 1)
		// Cut between two distinct neighbours: when the quantile falls
		// inside a run of equal values, move to the end of the run.
		prev := v[i-1]
		i += sort.Search(n-i, func(k int) bool { return v[i+k] > prev })
		if i >= n {
			break
		}
		e := midpoint(v[i-1], v[i])
		if len(edges) == 0 || e > edges[len(edges)-1] {
			edges = append(edges, e)
		}
	}
	return edges
}

// midpoint is the split threshold between two adjacent sampled values.
func midpoint(a, b float64) float64 { return a + (b-a)/2 }

// binColumns quantises the rows of x (row-major, d features) with edges
// taken from the same rows.
func binColumns(x [][]float64, d int) *binnedData {
	bd := &binnedData{bins: make([][]uint16, d), edges: make([][]float64, d), lo: make([][]float64, d), hi: make([][]float64, d)}
	col := make([]float64, len(x))
	for f := 0; f < d; f++ {
		for i, r := range x {
			col[i] = r[f]
		}
		e := binEdges(col)
		b := make([]uint16, len(x))
		lo, hi := make([]float64, len(e)+1), make([]float64, len(e)+1)
		for i := range lo {
			lo[i], hi[i] = math.Inf(1), math.Inf(-1)
		}
		for i, v := range col {
			k := sort.SearchFloat64s(e, v)
			b[i] = uint16(k)
			lo[k], hi[k] = math.Min(lo[k], v), math.Max(hi[k], v)
		}
		bd.edges[f], bd.bins[f], bd.lo[f], bd.hi[f] = e, b, lo, hi
	}
	return bd
}
