package bundle

import "sort"

// maxGridCells bounds the lookup grid of one predictor (8 bytes a cell).
const maxGridCells = 1 << 18

// Grid is an exact compilation of a forest: a forest is constant on every
// cell of the product of the intervals its split thresholds cut each
// feature into, so one value per cell answers every query. A query costs a
// binary search per feature instead of a walk down every tree.
type Grid struct {
	cuts   [][]float64 // per feature, the sorted split thresholds
	stride []int
	values []float64
}

// CompileGrid tabulates f, or returns nil when the grid would exceed
// maxGridCells. Each tree is walked once with a box of cells: a split
// narrows the box of each child, and a leaf adds its value to every cell
// of its box, so the cost is cells x trees additions.
func CompileGrid(f *Forest) *Grid {
	cuts := f.thresholds()
	cells := 1
	stride := make([]int, len(cuts))
	for i := len(cuts) - 1; i >= 0; i-- {
		stride[i] = cells
		cells *= len(cuts[i]) + 1
		if cells > maxGridCells {
			return nil
		}
	}
	g := &Grid{cuts: cuts, stride: stride, values: make([]float64, cells)}
	d := len(cuts)
	lo, hi := make([]int, d), make([]int, d)
	w := 1 / float64(len(f.Roots))
	for _, root := range f.Roots {
		for i := range cuts {
			lo[i], hi[i] = 0, len(cuts[i])+1
		}
		g.addBox(f, root, lo, hi, w)
	}
	return g
}

// addBox adds w times the leaf values of the subtree at node i to the cells
// of the box [lo, hi) (interval indices per feature).
func (g *Grid) addBox(f *Forest, i int32, lo, hi []int, w float64) {
	n := f.Nodes[i]
	if n.Feat < 0 {
		g.fill(lo, hi, w*n.Thr)
		return
	}
	j := n.Feat
	// Intervals 0..c end at or below the threshold: they go left.
	c := searchCut(g.cuts[j], n.Thr)
	l, h := lo[j], hi[j]
	if l <= c {
		hi[j] = min(h, c+1)
		g.addBox(f, n.Left, lo, hi, w)
		hi[j] = h
	}
	if h > c+1 {
		lo[j] = max(l, c+1)
		g.addBox(f, n.Left+1, lo, hi, w)
		lo[j] = l
	}
}

// fill adds v to every cell of the box [lo, hi).
func (g *Grid) fill(lo, hi []int, v float64) {
	d := len(lo)
	if d == 0 {
		g.values[0] += v
		return
	}
	idx := append([]int(nil), lo...)
	last := d - 1
	for {
		base := 0
		for k := 0; k < last; k++ {
			base += idx[k] * g.stride[k]
		}
		row := g.values[base+lo[last] : base+hi[last]]
		for k := range row {
			row[k] += v
		}
		// Advance the odometer over the outer features.
		k := last - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < hi[k] {
				break
			}
			idx[k] = lo[k]
		}
		if k < 0 {
			return
		}
	}
}

// Predict returns the forest's value for x.
func (g *Grid) Predict(x []float64) float64 {
	c := 0
	for i, cs := range g.cuts {
		c += searchCut(cs, x[i]) * g.stride[i]
	}
	return g.values[c]
}

// searchCut returns the number of cuts strictly below v: the interval index
// of v (v equal to a cut belongs to the interval the cut closes).
func searchCut(cs []float64, v float64) int {
	lo, hi := 0, len(cs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if cs[m] < v {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func sortFloats(v []float64) { sort.Float64s(v) }
