package kerneldb

import (
	"math"
	"sort"
)

// curve is measured times along one dimension (tokens, KV length, message
// size) at fixed other dimensions, sorted by x; a repeated x holds the
// mean of its rows.
//
// Between measured points it interpolates linearly. Below the smallest
// point it holds the smallest point's time (a kernel this small is bound
// by launch and fixed costs, not by its size). Above the largest point it
// scales that point's time in proportion to x (the throughput of the
// largest measured size carries on): the extrapolation rule of every
// table.
type curve struct {
	xs, ys []float64
}

// newCurve builds a curve from unsorted points.
func newCurve(xs, ys []float64) curve {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return xs[idx[a]] < xs[idx[b]] })
	var c curve
	var n float64
	for _, i := range idx {
		if k := len(c.xs) - 1; k >= 0 && c.xs[k] == xs[i] {
			n++
			c.ys[k] += (ys[i] - c.ys[k]) / n
			continue
		}
		c.xs, c.ys, n = append(c.xs, xs[i]), append(c.ys, ys[i]), 1
	}
	return c
}

// at returns the time at x and how it was found.
func (c *curve) at(x float64) (float64, Fit) {
	n := len(c.xs)
	switch {
	case n == 0:
		return math.NaN(), Uncovered
	case x <= c.xs[0]:
		if x == c.xs[0] {
			return c.ys[0], Exact
		}
		return c.ys[0], Extrapolated
	case x >= c.xs[n-1]:
		if x == c.xs[n-1] {
			return c.ys[n-1], Exact
		}
		return c.ys[n-1] * x / c.xs[n-1], Extrapolated
	}
	i := sort.SearchFloat64s(c.xs, x)
	if c.xs[i] == x {
		return c.ys[i], Exact
	}
	x0, x1 := c.xs[i-1], c.xs[i]
	w := (x - x0) / (x1 - x0)
	return c.ys[i-1] + w*(c.ys[i]-c.ys[i-1]), Interpolated
}

// Fit says how a lookup was answered.
type Fit uint8

// How a lookup was answered, best first.
const (
	Exact        Fit = iota // a measured row of this shape
	Interpolated            // between measured rows of the same kernel configuration
	Scaled                  // from a measured configuration of another shape, scaled by work
	Extrapolated            // outside the measured range (the stated rule)
	Uncovered               // no row of this dtype and kernel: the caller falls back
)

func (f Fit) String() string {
	return [...]string{"exact", "interpolated", "scaled", "extrapolated", "uncovered"}[f]
}

// worse returns the less exact of two fits.
func worse(a, b Fit) Fit { return max(a, b) }

// grid2 is curves along y at measured values of x (batch sizes, GEMM
// sizes): linear between the bracketing x, held below the smallest x,
// proportional to x above the largest.
type grid2 struct {
	xs     []float64
	curves []curve
}

func newGrid2(xs, ys, ts []float64) grid2 {
	by := map[float64][2][]float64{}
	for i, x := range xs {
		p := by[x]
		p[0], p[1] = append(p[0], ys[i]), append(p[1], ts[i])
		by[x] = p
	}
	var g grid2
	for x := range by {
		g.xs = append(g.xs, x)
	}
	sort.Float64s(g.xs)
	for _, x := range g.xs {
		g.curves = append(g.curves, newCurve(by[x][0], by[x][1]))
	}
	return g
}

func (g *grid2) at(x, y float64) (float64, Fit) {
	n := len(g.xs)
	switch {
	case n == 0:
		return math.NaN(), Uncovered
	case x <= g.xs[0]:
		t, f := g.curves[0].at(y)
		if x < g.xs[0] {
			f = worse(f, Extrapolated)
		}
		return t, f
	case x >= g.xs[n-1]:
		t, f := g.curves[n-1].at(y)
		if x > g.xs[n-1] {
			return t * x / g.xs[n-1], worse(f, Extrapolated)
		}
		return t, f
	}
	i := sort.SearchFloat64s(g.xs, x)
	if g.xs[i] == x {
		return g.curves[i].at(y)
	}
	t0, f0 := g.curves[i-1].at(y)
	t1, f1 := g.curves[i].at(y)
	w := (x - g.xs[i-1]) / (g.xs[i] - g.xs[i-1])
	return t0 + w*(t1-t0), worse(worse(f0, f1), Interpolated)
}
