package fit

import "math"

// One extrapolation answers beyond the domain of every key of an operator:
// which answers beyond a sweep's edge better is the kernel's physics
// against its fallback's, and a thin key (7 shapes: 2 edge shapes in CV)
// cannot tell on its own. The fallback's increment, its roofline shape's
// (roof_increment: a kernel streaming weights stays flat while its FLOPs
// grow) or the edge value on both sides is chosen by the least CV error
// over all the operator's keys (ties to the fallback's increment); the edge value on one side only (a
// kernel that levels off at the top of its sweep but falls with its work
// below the bottom, or the other way round) takes over only where it beats
// that choice by more than one standard error of the paired difference,
// summed over shapes: one more choice is one more way to fit the folds
// (the one-standard-error rule, Breiman et al., Classification and
// Regression Trees, 1984, ch. 3.4; Hastie et al., The Elements of
// Statistical Learning, 2009, ch. 7.10). Folds hold out a whole shape, so
// CV judges a step of one shape beyond the edge, and a simulation may query
// much further: on the A800 prefill rows below 1,024 tokens
// (TestExtrapolationFollowsPhysics) the edge above won CV by 0.05% of the
// error and, taken, missed the rows past the cut by 52% against the
// fallback's 10%. On the H800 Phi-tiny KERNEL_ONLY grouped GEMM sweeps (16
// keys, each sweep flat from 32 to 64 tokens) it won by 15% of the error:
// the fallback's increment had predicted the top shape 41-73% high and 4
// keys lost to scikit-learn's forest under nested CV by 1.4-6.4 points
// (BenchmarkCVProfiles).

// familyExtrapolation decides the extrapolation of an operator's keys:
// for each extrapolation the best model of every key (least CV error with
// it) answers, and the errors are summed over the keys' rows (see above).
func familyExtrapolation(fam []*keyFit, ppred [][][]float64) string {
	// ape[e] holds, per key and shape of its training rows, the summed
	// absolute percentage error of the key's best model with extrapolation
	// e; nil when some key has no model with it.
	ape := make([][]float64, len(extrapolations))
	for e := range extrapolations {
		for i, kf := range fam {
			var preds [][]float64
			if kf.ownPredBy != nil && kf.ownPredBy[e] != nil {
				preds = append(preds, kf.ownPredBy[e])
			}
			if ppred != nil {
				preds = append(preds, ppred[e][i])
			}
			preds = append(preds, kf.fbPred[e])
			kb, best := math.Inf(1), []float64(nil)
			for _, p := range preds {
				if v := kf.cvOf(p); v < kb {
					kb, best = v, p
				}
			}
			id, n := shapes(kf.train)
			sums := make([]float64, n)
			if best != nil {
				for j, r := range kf.train {
					sums[id[j]] += 100 * math.Abs(best[j]-r.TimeMs) / r.TimeMs
				}
			}
			ape[e] = append(ape[e], sums...)
		}
	}
	tot := func(e int) float64 {
		var s float64
		for _, v := range ape[e] {
			s += v
		}
		return s
	}
	// One answer on both sides: the least error (ties to the fallback's
	// increment).
	at := 0
	for e := range bothSides {
		if tot(e) < tot(at) {
			at = e
		}
	}
	ref := at
	for e := bothSides; e < len(extrapolations); e++ {
		if tot(e) < tot(at) && tot(e)-tot(ref) < -pairedSE(ape[e], ape[ref]) {
			at = e
		}
	}
	return extrapolations[at]
}

// pairedSE is the standard error of the summed difference a - b over
// paired units.
func pairedSE(a, b []float64) float64 {
	n := float64(len(a))
	if n < 2 {
		return 0
	}
	var d float64
	for s := range a {
		d += a[s] - b[s]
	}
	mean := d / n
	var ss float64
	for s := range a {
		v := a[s] - b[s] - mean
		ss += v * v
	}
	return math.Sqrt(ss/(n-1)) * math.Sqrt(n)
}
