package fit

import (
	"fmt"
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

// maxTerms bounds the terms of a fallback model (an intercept and the
// features or FLOPs and bytes).
const maxTerms = 8

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

// terms fills out with the basis terms of x and returns how many there are.
func (f *Fallback) terms(x []float64, out *[maxTerms]float64) int {
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
	var t [maxTerms]float64
	n := f.terms(x, &t)
	var s float64
	for i := 0; i < n; i++ {
		s += f.Coef[i] * t[i]
	}
	return s
}

// opShape finds the per-GPU shape of the operator of key k in model m, or
// says why there is none.
func opShape(m *spec.Model, k spec.OpKey) (*spec.Op, string) {
	if m == nil {
		return nil, "no model given: fallback on the raw features"
	}
	l := spec.Layout{TP: k.TP, EP: max(k.EP, 1)}
	switch k.Op {
	case spec.OpEPDispatch, spec.OpEPCombine: // keyed by group size, not EP
		l.EP = max(k.Workers, 1)
		l.DP = max(1, l.EP/max(l.TP, 1))
	case spec.OpSendRecv: // only between pipeline stages
		l.PP = 2
	}
	var cands []spec.Op
	for _, i := range []int{0, m.NumLayers - 1} {
		cands = append(cands, spec.LayerOps(m, l, i)...)
	}
	first, last, between := spec.ModelOps(m, l)
	cands = append(cands, first...)
	cands = append(cands, last...)
	if between != nil {
		cands = append(cands, *between)
	}
	for _, o := range cands {
		if o.Name == k.Op {
			// The key's conditions override the layout's where the
			// operator has them.
			if k.LocalExperts > 0 && o.LocalExperts > 0 {
				o.LocalExperts = k.LocalExperts
			}
			if k.Workers > 0 && o.Workers > 0 {
				o.Workers = k.Workers
			}
			return &o, ""
		}
	}
	return nil, fmt.Sprintf("%s is not an operator of %s at TP=%d: fallback on the raw features", k.Op, m.Name, k.TP)
}

// fitFallback fits the physical model on features xs and times y (ms),
// minimising the squared relative error under non-negative coefficients.
func fitFallback(op *spec.Op, note string, features []string, xs [][]float64, y []float64) (*Fallback, error) {
	f := &Fallback{Basis: BasisRaw, Note: note}
	if op != nil {
		f.Basis, f.Op = BasisWork, op
		// An op that does no modelled work (host-side timings) has
		// nothing to be linear in.
		var any bool
		for _, x := range xs {
			if fl, by := op.Work(x); fl != 0 || by != 0 {
				any = true
				break
			}
		}
		if !any {
			f.Basis, f.Op = BasisRaw, nil
			f.Note = op.Name + " does no modelled FLOPs or bytes: fallback on the raw features"
		}
	}
	if f.Basis == BasisWork {
		f.Terms = []string{"intercept", "flops", "bytes"}
	} else {
		f.Terms = append([]string{"intercept"}, features...)
	}
	if len(f.Terms) > maxTerms {
		return nil, fmt.Errorf("fallback: %d terms, at most %d", len(f.Terms), maxTerms)
	}
	nt := len(f.Terms)
	a := make([][]float64, len(xs))
	b := make([]float64, len(xs))
	scale := make([]float64, nt)
	var t [maxTerms]float64
	for i, x := range xs {
		f.terms(x, &t)
		w := 1 / y[i]
		a[i] = make([]float64, nt)
		for j := 0; j < nt; j++ {
			a[i][j] = t[j] * w
			scale[j] = math.Max(scale[j], math.Abs(a[i][j]))
		}
		b[i] = 1 // y[i] * w
	}
	for i := range a {
		for j := range scale {
			if scale[j] > 0 {
				a[i][j] /= scale[j]
			}
		}
	}
	c, err := nnls(a, b)
	if err != nil {
		return nil, err
	}
	f.Coef = make([]float64, nt)
	for j := range c {
		if scale[j] > 0 {
			f.Coef[j] = c[j] / scale[j]
		}
	}
	return f, nil
}
