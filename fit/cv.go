package fit

import (
	"hash/fnv"
	"math"
	"slices"

	"github.com/ftk-dev/ftk/bundle"
)

// keySeed derives a per-predictor seed, so predictors do not share folds
// or bootstrap draws by accident and adding one leaves the others as they
// were.
func keySeed(seed uint64, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return seed ^ h.Sum64()
}

// extrapolations are the answers a predictor may give beyond its domain,
// each scored in cross-validation (ties go to the first).
var extrapolations = []string{bundle.ExtrapolateFallback, bundle.ExtrapolateEdge, bundle.ExtrapolateRoof, bundle.ExtrapolateEdgeAbove, bundle.ExtrapolateEdgeBelow}

// bothSides is the number of extrapolations (first in extrapolations) that
// answer alike on both sides of the domain.
const bothSides = 3

// rowDomain returns the range of every feature over rows (nil, nil for no
// rows: no domain).
func rowDomain(rows []Row) (lo, hi []float64) {
	for i, r := range rows {
		if i == 0 {
			lo, hi = slices.Clone(r.X), slices.Clone(r.X)
			continue
		}
		for j, v := range r.X {
			lo[j], hi[j] = math.Min(lo[j], v), math.Max(hi[j], v)
		}
	}
	return lo, hi
}

// crossValidate returns out-of-fold predictions, one slice per
// extrapolation: row i is predicted by a model trained on the rows of
// every other fold, as its predictor would
// answer with those rows' domain. Rows of a fold with no training rows
// left are NaN.
func crossValidate(si shapeInfo, rows []Row, folds []int, k int, target string, p bundle.ForestParams, workers int) ([][]float64, error) {
	pred := make([][]float64, len(extrapolations))
	for e := range pred {
		pred[e] = make([]float64, len(rows))
	}
	for f := 0; f < k; f++ {
		train, test := splitFold(rows, folds, f)
		if len(test) == 0 {
			continue
		}
		if len(train) == 0 {
			for e := range pred {
				for _, i := range test {
					pred[e][i] = math.NaN()
				}
			}
			continue
		}
		m, err := trainModel(si, train, target, p, workers)
		if err != nil {
			return nil, err
		}
		lo, hi := rowDomain(train)
		for e, mode := range extrapolations {
			for _, i := range test {
				pred[e][i] = m.PredictWithin(rows[i].X, lo, hi, mode)
			}
		}
	}
	return pred, nil
}

// errorStats compares predictions with measured times. Rows of 0 ms have
// no percentage error and rows predicted NaN (no model could be trained
// for their fold) no prediction: neither is counted.
func errorStats(pred []float64, rows []Row) bundle.ErrorStats {
	apes := make([]float64, 0, len(rows))
	var s float64
	for i, r := range rows {
		if r.TimeMs > 0 && !math.IsNaN(pred[i]) {
			apes = append(apes, 100*math.Abs(pred[i]-r.TimeMs)/r.TimeMs)
			s += apes[len(apes)-1]
		}
	}
	st := bundle.ErrorStats{Rows: len(apes)}
	if len(apes) == 0 {
		return st
	}
	slices.Sort(apes)
	st.MAPE = s / float64(len(apes))
	st.P50, st.P90, st.Max = quantile(apes, 0.5), quantile(apes, 0.9), apes[len(apes)-1]
	return st
}

// splitFold returns the rows outside fold f (to train on) and the indices
// of the rows in it (to predict).
func splitFold(rows []Row, folds []int, f int) (train []Row, test []int) {
	for i, r := range rows {
		if folds[i] == f {
			test = append(test, i)
			continue
		}
		train = append(train, r)
	}
	return train, test
}
