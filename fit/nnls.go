package fit

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// nnls solves min ||A c - b|| subject to c >= 0 (Lawson and Hanson's
// active-set method). A is m x n, row-major in a; n is small.
func nnls(a [][]float64, b []float64) ([]float64, error) {
	m := len(a)
	if m == 0 {
		return nil, errors.New("nnls: no rows")
	}
	n := len(a[0])
	A := mat.NewDense(m, n, nil)
	for i, r := range a {
		A.SetRow(i, r)
	}
	bv := mat.NewVecDense(m, b)
	c := make([]float64, n)
	passive := make([]bool, n)
	w := make([]float64, n)
	resid := mat.NewVecDense(m, nil)
	gradient := func() {
		cv := mat.NewVecDense(n, c)
		resid.MulVec(A, cv)
		resid.SubVec(bv, resid)
		g := mat.NewVecDense(n, w)
		g.MulVec(A.T(), resid)
	}
	// Tolerance on the gradient, relative to the problem's scale.
	tol := 1e-10 * mat.Norm(A, 1) * math.Max(1, mat.Norm(bv, math.Inf(1)))
	for iter := 0; iter < 3*n+10; iter++ {
		gradient()
		best, j := tol, -1
		for k := 0; k < n; k++ {
			if !passive[k] && w[k] > best {
				best, j = w[k], k
			}
		}
		if j < 0 {
			return c, nil
		}
		passive[j] = true
		for inner := 0; inner < 3*n+10; inner++ {
			z, err := lsqSubset(A, bv, passive)
			if err != nil {
				return nil, err
			}
			neg := false
			for k := range z {
				if passive[k] && z[k] <= 0 {
					neg = true
				}
			}
			if !neg {
				copy(c, z)
				break
			}
			// Step from c towards z until a passive coefficient hits zero.
			alpha := math.Inf(1)
			for k := range z {
				if passive[k] && z[k] <= 0 {
					alpha = math.Min(alpha, c[k]/(c[k]-z[k]))
				}
			}
			for k := range c {
				c[k] += alpha * (z[k] - c[k])
				if passive[k] && c[k] <= 1e-15 {
					passive[k], c[k] = false, 0
				}
			}
		}
	}
	return c, nil
}

// lsqSubset solves the least squares problem on the columns marked in
// use (the other coefficients are zero) through the normal equations with a
// tiny ridge, so collinear columns (an intercept beside the bytes of a GEMM,
// which are affine in the tokens too) do not make it singular.
func lsqSubset(A *mat.Dense, b *mat.VecDense, use []bool) ([]float64, error) {
	m, n := A.Dims()
	var cols []int
	for k := 0; k < n; k++ {
		if use[k] {
			cols = append(cols, k)
		}
	}
	p := len(cols)
	g := mat.NewSymDense(p, nil)
	h := mat.NewVecDense(p, nil)
	var trace float64
	for x, k := range cols {
		for y := x; y < p; y++ {
			var s float64
			for i := 0; i < m; i++ {
				s += A.At(i, k) * A.At(i, cols[y])
			}
			g.SetSym(x, y, s)
		}
		trace += g.At(x, x)
		var s float64
		for i := 0; i < m; i++ {
			s += A.At(i, k) * b.AtVec(i)
		}
		h.SetVec(x, s)
	}
	ridge := 1e-10 * math.Max(trace, 1e-300) / float64(p)
	for x := 0; x < p; x++ {
		g.SetSym(x, x, g.At(x, x)+ridge)
	}
	var ch mat.Cholesky
	if !ch.Factorize(g) {
		return nil, errors.New("nnls: normal equations not positive definite")
	}
	var sol mat.VecDense
	if err := ch.SolveVecTo(&sol, h); err != nil {
		var cond mat.Condition
		if !errors.As(err, &cond) { // ill-conditioning is expected; the ridge keeps it finite
			return nil, fmt.Errorf("nnls: %w", err)
		}
	}
	z := make([]float64, n)
	for x, k := range cols {
		z[k] = sol.AtVec(x)
	}
	return z, nil
}
