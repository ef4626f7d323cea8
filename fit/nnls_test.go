package fit

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

func TestNNLS(t *testing.T) {
	tests := []struct {
		name string
		a    [][]float64
		b    []float64
		want []float64
	}{
		// Exact non-negative solution: found as is.
		{"exact", [][]float64{{1, 0}, {0, 1}, {1, 1}}, []float64{2, 3, 5}, []float64{2, 3}},
		// Unconstrained least squares wants a negative slope: clamped to 0
		// and the intercept takes the mean.
		{"clamped", [][]float64{{1, 1}, {1, 2}, {1, 3}}, []float64{3, 2, 1}, []float64{2, 0}},
		// Collinear columns (intercept and an affine feature) stay finite.
		{"collinear", [][]float64{{1, 1, 3}, {1, 2, 5}, {1, 3, 7}}, []float64{2, 3, 4}, nil},
	}
	for _, tc := range tests {
		c, err := nnls(tc.a, tc.b)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, v := range c {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s: coefficient %d = %g", tc.name, i, v)
			}
			if tc.want != nil && math.Abs(v-tc.want[i]) > 1e-6 {
				t.Errorf("%s: c = %v, want %v", tc.name, c, tc.want)
			}
		}
		if tc.want == nil { // check the fit itself
			for i, row := range tc.a {
				var p float64
				for j := range row {
					p += row[j] * c[j]
				}
				if math.Abs(p-tc.b[i]) > 1e-6 {
					t.Errorf("%s: row %d predicts %g, want %g (c=%v)", tc.name, i, p, tc.b[i], c)
				}
			}
		}
	}
}

// TestFallbackMonotone: the fallback of every operator of every catalog
// model never decreases when each size feature grows, whatever its
// (non-negative) coefficients.
func TestFallbackMonotone(t *testing.T) {
	for _, name := range spec.ModelNames() {
		m, _ := spec.LookupModel(name)
		for _, l := range []spec.Layout{{TP: 1}, {TP: 2, EP: 2}, {TP: 8, EP: 8}} {
			if l.Validate(m) != nil {
				continue
			}
			for _, e := range spec.QueryDomain(m, l, spec.EngineLimits{MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, MaxModelLen: 8192, BlockSize: spec.DefaultBlockSize}) {
				op, _ := bundle.OpShape(m, e.Key)
				if op == nil {
					t.Fatalf("%s %s: no shape for %s", name, l, e.Key)
				}
				fb := &bundle.Fallback{Basis: bundle.BasisWork, Op: op, Coef: []float64{0.01, 1e-9, 1e-7}}
				lo := make([]float64, len(e.Ranges))
				for i, r := range e.Ranges {
					lo[i] = r.Min
				}
				prev := fb.PredictMs(lo)
				x := append([]float64(nil), lo...)
				for step := 0; step < 40; step++ {
					// Grow one feature at a time, round robin.
					i := step % len(x)
					r := e.Ranges[i]
					x[i] = math.Min(r.Max, x[i]+(r.Max-r.Min)/13+1)
					v := fb.PredictMs(x)
					if v < prev-1e-12 {
						t.Fatalf("%s %s %s: fallback fell from %g to %g at %v", name, l, e.Key, prev, v, x)
					}
					prev = v
				}
			}
		}
	}
}
