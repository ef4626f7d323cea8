package bundle

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Fallback bases: what the physical model is linear in.
const (
	// BasisWork is time = a + b*FLOPs + c*bytes, with FLOPs and bytes from
	// spec.Op.Work for the operator's per-GPU shape.
	BasisWork = "work"
	// BasisRaw is time = a + sum_i b_i*x_i on the raw features, used when
	// the operator's shape is unknown (model not in the catalog, or an op
	// the catalog does not describe) or does no modelled work.
	BasisRaw = "raw"
)

// MaxTerms bounds the terms of a fallback model (an intercept and the
// features or FLOPs and bytes).
const MaxTerms = 8

// Fallback is the physical model beside a forest: non-negative
// coefficients on an intercept and quantities that never decrease when a
// size feature grows, so its predictions never decrease either.
type Fallback struct {
	Basis string `json:"basis"`
	// Terms names the basis terms, Coef their coefficients (ms per unit).
	Terms []string  `json:"terms"`
	Coef  []float64 `json:"coef"`
	// Op is the per-GPU shape (BasisWork only).
	Op *spec.Op `json:"op,omitempty"`
	// Note says why the raw basis was used.
	Note string `json:"note,omitempty"`
}

// BasisTerms fills out with the basis terms of x and returns how many there are.
func (f *Fallback) BasisTerms(x []float64, out *[MaxTerms]float64) int {
	out[0] = 1
	if f.Basis == BasisWork {
		out[1], out[2] = f.Op.Work(x)
		return 3
	}
	copy(out[1:], x)
	return 1 + len(x)
}

// PredictMs is the fallback's time for features x.
func (f *Fallback) PredictMs(x []float64) float64 {
	var t [MaxTerms]float64
	n := f.BasisTerms(x, &t)
	var s float64
	for i := 0; i < n; i++ {
		s += f.Coef[i] * t[i]
	}
	return s
}

// RoofMs is the fallback's roofline shape at x: the intercept plus the
// largest of its other terms (coefficient times basis term), where
// PredictMs adds them. roofline.Roofline prices a kernel by the larger of its
// compute and memory times, so a GEMV-like kernel streaming its weights
// stays flat while its FLOPs grow until they overtake the weight stream;
// the sum grows with every term from the start. It is never above
// PredictMs and grows by no more than it between two points where every
// term grows.
func (f *Fallback) RoofMs(x []float64) float64 {
	var t [MaxTerms]float64
	n := f.BasisTerms(x, &t)
	var m float64
	for i := 1; i < n; i++ {
		m = math.Max(m, f.Coef[i]*t[i])
	}
	return f.Coef[0]*t[0] + m
}
