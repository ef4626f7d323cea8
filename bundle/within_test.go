package bundle

import (
	"math"
	"testing"
)

// TestWithinExtrapolatesBySide checks every extrapolation on a domain of
// [10, 20] x [1, 2], a model that answers 5 + x0 (its edge: 15 below,
// 25 above in x0) and a fallback 1 + 2*x0 + 3*x1: inside, the model;
// outside, the edge value plus the fallback's increment to the query on
// the sides the mode does not answer by the edge (EdgeSides), increments
// kept non-negative above and non-positive below, never under the floor.
func TestWithinExtrapolatesBySide(t *testing.T) {
	lo, hi := []float64{10, 1}, []float64{20, 2}
	fb := &Fallback{Basis: BasisRaw, Terms: []string{"intercept", "a", "b"}, Coef: []float64{1, 2, 3}}
	predict := func(x []float64) float64 { return 5 + x[0] }
	const floor = 10
	tests := []struct {
		name string
		x    []float64
		// want per mode: fallback_increment, edge, edge_above, edge_below,
		// roof_increment (its shape 1 + max(2*x0, 3*x1): 2*x0 >= 20 leads
		// while x1 <= 6)
		want [5]float64
	}{
		{"inside", []float64{15, 1.5}, [5]float64{20, 20, 20, 20, 20}},
		// x0 = 30 above: edge 25, increment 2*(30-20) = 20.
		{"above", []float64{30, 1.5}, [5]float64{45, 25, 25, 45, 45}},
		// x1 = 4 above: edge 20, increment 3*(4-2) = 6 summed; the roof
		// stays at 2*x0 = 30, so no increment.
		{"above in the lesser term", []float64{15, 4}, [5]float64{26, 20, 20, 26, 20}},
		// x1 = 12 above: the roof's 3*x1 = 36 overtakes 2*x0 = 30 (+6).
		{"lesser term overtakes", []float64{15, 12}, [5]float64{50, 20, 20, 50, 26}},
		// x0 = 8 below: edge 15, increment -4.
		{"below", []float64{8, 1.5}, [5]float64{11, 15, 11, 15, 11}},
		// far below: the floor.
		{"floor", []float64{0, 1}, [5]float64{floor, 15, floor, 15, floor}},
		// x0 below (-4) and x1 above (+3): the fallback sides alone count;
		// with both, the increment is -1 either way; the roof goes from
		// 2*10 to max(2*8, 3*3) = 16: -4.
		{"mixed", []float64{8, 3}, [5]float64{14, 15, 11, 18, 11}},
	}
	modes := []string{ExtrapolateFallback, ExtrapolateEdge, ExtrapolateEdgeAbove, ExtrapolateEdgeBelow, ExtrapolateRoof}
	for _, tc := range tests {
		for m, mode := range modes {
			got := Within(tc.x, lo, hi, mode, fb, floor, predict)
			if math.Abs(got-tc.want[m]) > 1e-12 {
				t.Errorf("%s %v %s: %g, want %g", tc.name, tc.x, mode, got, tc.want[m])
			}
		}
	}
	if b, a := EdgeSides(""); b || a {
		t.Errorf("no extrapolation recorded (an older bundle's default) answers the edge: want the fallback on both sides")
	}
}
