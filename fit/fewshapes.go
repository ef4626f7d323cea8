package fit

import (
	"math"

	"github.com/ftk-dev/ftk/bundle"
)

// Keys with few shapes decide together. A key of 7 or 8 shapes has 1 or 2
// shapes per CV fold, and picking the least CV error among its 12 model
// choices (4 forest candidates, pooled, fallback, each with 2
// extrapolations) on so few fits the choice to the folds: under nested CV
// 11 of the 116 H800 linear predictors (8 shapes) and 9 of the 32 H800
// KERNEL_ONLY grouped GEMM ones (7 shapes) lost to a fixed scikit-learn
// forest by more than 0.5 points (fit/bench_cv_test.go, session 4). The operator's few-shape keys therefore share
// their forest candidate and their kind of model, each chosen by the CV
// error summed over all their rows; a key still chooses alone when it is
// the only one.

// fewShapeKeys returns the indices in fam of the keys with fewer than
// 2 x MinShapes shapes (the keys too small for a holdout).
func fewShapeKeys(fam []*keyFit, opt Options) []int {
	var few []int
	for i, kf := range fam {
		if _, n := shapes(kf.rows); n < 2*opt.MinShapes {
			few = append(few, i)
		}
	}
	if len(few) < 2 {
		return nil
	}
	return few
}

// sharedCandidate makes the own-forest candidate of every few-shape key
// that has one, per extrapolation, the candidate with the least CV error
// summed over those keys' rows.
func sharedCandidate(fam []*keyFit, few []int, opt Options) {
	for e, ext := range extrapolations {
		best, at := math.Inf(1), -1
		for c := range candidates(opt.Trees, 0) {
			var tot float64
			n := 0
			for _, i := range few {
				kf := fam[i]
				if kf.candPred == nil {
					continue
				}
				if v := kf.cvOf(kf.candPred[c][e]); !math.IsNaN(v) {
					tot, n = tot+v*float64(len(kf.train)), n+1
				}
			}
			if n > 0 && tot < best {
				best, at = tot, c
			}
		}
		if at < 0 {
			continue
		}
		for _, i := range few {
			kf := fam[i]
			if kf.candPred == nil {
				continue
			}
			c := candidates(opt.Trees, kf.seed)[at]
			c.Extrapolation, c.CVMAPE = ext, kf.cvOf(kf.candPred[at][e])
			kf.ownBy[e], kf.ownPredBy[e] = &c, kf.candPred[at][e]
		}
	}
}

// sharedModel returns the kind of model (own forest, pooled, fallback)
// whose CV error with the operator's extrapolation, summed over the
// few-shape keys' rows, is least; a key without that kind counts the least
// CV error it has, as it will answer. "" when there are no such keys.
func sharedModel(fam []*keyFit, few []int, ppred [][][]float64, mode string) string {
	if len(few) == 0 {
		return ""
	}
	e := 0
	for j, ext := range extrapolations {
		if ext == mode {
			e = j
		}
	}
	kinds := []string{bundle.ModelForest, bundle.ModelPooled, bundle.ModelFallback}
	best, at := math.Inf(1), len(kinds)-1
	for k, kind := range kinds {
		var tot float64
		for _, i := range few {
			kf := fam[i]
			cv := map[string]float64{bundle.ModelFallback: kf.cvOf(kf.fbPred[e])}
			if kf.ownPredBy != nil && kf.ownPredBy[e] != nil {
				cv[bundle.ModelForest] = kf.cvOf(kf.ownPredBy[e])
			}
			if ppred != nil {
				cv[bundle.ModelPooled] = kf.cvOf(ppred[e][i])
			}
			v, ok := cv[kind]
			if !ok || math.IsNaN(v) {
				v = math.Inf(1)
				for _, w := range cv {
					if !math.IsNaN(w) {
						v = math.Min(v, w)
					}
				}
			}
			if !math.IsInf(v, 1) {
				tot += v * float64(len(kf.train))
			}
		}
		if tot < best {
			best, at = tot, k
		}
	}
	return kinds[at]
}
