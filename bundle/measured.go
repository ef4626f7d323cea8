package bundle

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// MeasuredShape is one distinct feature vector among a predictor's
// training rows with the median of its measured times. A predictor answers
// a measured shape with its measurement and every other shape with its
// model: a forest chosen because it predicts unseen shapes well (leaf
// size, target, pooling or the fallback alone, by cross-validation) need
// not reproduce the rows it was trained on, and a shape that was measured
// has no better answer than the measurement.
type MeasuredShape struct {
	X  []float64 `json:"x"`
	Ms float64   `json:"ms"`
}

// measured is a predictor's measured shapes, sorted lexicographically by
// feature vector and stored flat (d values per shape) for an
// allocation-free binary search.
type measured struct {
	d  int
	x  []float64
	ms []float64
}

// newMeasured checks and indexes shapes of d features each: finite
// features, a positive finite time, no shape twice.
func newMeasured(shapes []MeasuredShape, d int) (*measured, error) {
	if len(shapes) == 0 {
		return nil, nil
	}
	s := slices.Clone(shapes)
	for i, m := range s {
		if len(m.X) != d {
			return nil, fmt.Errorf("measured shape %d has %d features, want %d", i, len(m.X), d)
		}
		for _, v := range m.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("measured shape %d: feature %v", i, v)
			}
		}
		if !(m.Ms > 0) || math.IsInf(m.Ms, 0) {
			return nil, fmt.Errorf("measured shape %d: time %v ms", i, m.Ms)
		}
	}
	slices.SortFunc(s, func(a, b MeasuredShape) int { return compareX(a.X, b.X) })
	t := &measured{d: d, x: make([]float64, 0, d*len(s)), ms: make([]float64, 0, len(s))}
	for i, m := range s {
		if i > 0 && compareX(s[i-1].X, m.X) == 0 {
			return nil, fmt.Errorf("measured shape %v appears twice", m.X)
		}
		t.x = append(t.x, m.X...)
		t.ms = append(t.ms, m.Ms)
	}
	return t, nil
}

// compareX orders feature vectors lexicographically.
func compareX(a, b []float64) int {
	for i := range a {
		if c := cmp.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// lookup returns the measurement of shape x, if it was measured.
func (t *measured) lookup(x []float64) (float64, bool) {
	if t == nil || len(x) != t.d {
		return 0, false
	}
	lo, hi := 0, len(t.ms)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if compareX(t.x[mid*t.d:(mid+1)*t.d], x) < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(t.ms) && compareX(t.x[lo*t.d:(lo+1)*t.d], x) == 0 {
		return t.ms[lo], true
	}
	return 0, false
}
