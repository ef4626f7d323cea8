package fit

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// fitFallback fits the physical model on features xs and times y (ms),
// minimising the squared relative error under non-negative coefficients.
func fitFallback(op *spec.Op, note string, features []string, xs [][]float64, y []float64) (*bundle.Fallback, error) {
	f := &bundle.Fallback{Basis: bundle.BasisRaw, Note: note}
	if op != nil {
		f.Basis, f.Op = bundle.BasisWork, op
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
			f.Basis, f.Op = bundle.BasisRaw, nil
			f.Note = op.Name + " does no modelled FLOPs or bytes: fallback on the raw features"
		}
	}
	if f.Basis == bundle.BasisWork {
		f.Terms = []string{"intercept", "flops", "bytes"}
	} else {
		f.Terms = append([]string{"intercept"}, features...)
	}
	if len(f.Terms) > bundle.MaxTerms {
		return nil, fmt.Errorf("fallback: %d terms, at most %d", len(f.Terms), bundle.MaxTerms)
	}
	nt := len(f.Terms)
	a := make([][]float64, len(xs))
	b := make([]float64, len(xs))
	scale := make([]float64, nt)
	var t [bundle.MaxTerms]float64
	for i, x := range xs {
		f.BasisTerms(x, &t)
		inv := 1 / y[i]
		a[i] = make([]float64, nt)
		for j := 0; j < nt; j++ {
			a[i][j] = t[j] * inv
			scale[j] = math.Max(scale[j], math.Abs(a[i][j]))
		}
		b[i] = 1 // y[i] * inv
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
