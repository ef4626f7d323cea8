package fit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// keyFit is one operator key during a fit: its rows, folds and holdout,
// the cross-validated predictions of every model it could use, and at the
// end its chosen model.
type keyFit struct {
	si   shapeInfo
	seed uint64
	meta *bundle.PredictorMeta
	// all are the key's rows of positive time (every measurement); rows
	// those trained on (all, or a median per shape), each a sample of its
	// own: the error is counted on rows, and weighting a shape's repeats
	// 1/n raised the nested-CV error of the A800 attention predictors
	// (mean 8.6% -> 7.1% without; fit/bench_cv_test.go).
	all  []Row
	rows []Row
	// train and hold split rows by shape; folds (k of them) split train
	// by shape.
	train, hold []Row
	folds       []int
	k           int
	// ownBy is the best own-forest candidate per extrapolation
	// (extrapolations order) and ownPredBy its out-of-fold predictions on
	// train (nil when the key is too thin); own the one chosen. candPred
	// holds every candidate's out-of-fold predictions (candidates order,
	// then extrapolations order) for the operator's few-shape keys to
	// decide on together (fewshapes.go). fbPred is
	// the fallback's, one slice per extrapolation; foldFits what a
	// predictor trained outside each fold knows besides its forest.
	ownBy     []*bundle.SearchResult
	ownPredBy [][]float64
	own       *bundle.SearchResult
	candPred  [][][]float64
	fbPred    [][]float64
	foldFits  []foldFit
	// zero: every row took 0 ms; final is the chosen model.
	zero  bool
	final *bundle.Model
}

// newKeyFit checks the rows of one key and prepares its folds and holdout.
func newKeyFit(arch *spec.Model, o OpRows, opt Options) (*keyFit, error) {
	names := spec.OpFeatures(o.Key.Op)
	op, note := bundle.OpShape(arch, o.Key)
	kf := &keyFit{si: shapeInfo{key: o.Key, op: op, note: note, names: names}, seed: keySeed(opt.Seed, o.Key.String())}
	if len(names) > bundle.MaxFeatures {
		return nil, fmt.Errorf("fit: %s has %d features, at most %d", o.Key, len(names), bundle.MaxFeatures)
	}
	for _, r := range o.Rows {
		if len(r.X) != len(names) {
			return nil, fmt.Errorf("fit: %s:%d: %s has %d features, want %d (%s)", r.Source, r.Line, o.Key, len(r.X), len(names), strings.Join(names, ", "))
		}
		for j, v := range r.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("fit: %s:%d: %s feature %s is %v", r.Source, r.Line, o.Key, names[j], v)
			}
		}
		if !(r.TimeMs >= 0) || math.IsInf(r.TimeMs, 0) {
			return nil, fmt.Errorf("fit: %s:%d: %s time %v ms is not a time", r.Source, r.Line, o.Key, r.TimeMs)
		}
	}
	if len(o.Rows) == 0 {
		return nil, fmt.Errorf("fit: %s has no rows; leave the key out of the training set", o.Key)
	}
	pos, zero := positiveRows(o.Rows)
	if len(pos) == 0 {
		meta, m, err := zeroPredictor(o.Key, names, zero)
		if err != nil {
			return nil, err
		}
		kf.meta, kf.final, kf.zero = meta, m, true
		return kf, nil
	}
	kf.all = pos
	kf.rows = pos
	if opt.Repeats == bundle.RepeatsMedian {
		kf.rows = medianRows(pos)
	}
	kf.meta = &bundle.PredictorMeta{Key: o.Key, Features: names, ForestFeatures: bundle.ForestFeatures(o.Key.Op).Names(),
		Domain: featureDomains(names, pos), Rows: len(o.Rows), TrainRows: len(kf.rows), Dropped: []bundle.Dropped{},
		Repeats: repeatStats(pos), Search: []bundle.SearchResult{}, Choices: []bundle.ModelChoice{}}
	if len(zero) > 0 {
		kf.meta.Dropped = append(kf.meta.Dropped, bundle.Dropped{Reason: bundle.DropZero, Group: zero[0].Group, Rows: len(zero), Lines: firstLines(zero)})
	}
	var err error
	if kf.meta.PrimaryGroup, kf.meta.Groups, err = groupRatios(kf.si, pos, kf.seed); err != nil {
		return nil, err
	}
	kf.splitHoldout(opt)
	return kf, nil
}

// splitHoldout holds out a fraction of the shapes when there are enough
// left to search on, and deals the rest into grouped folds.
func (kf *keyFit) splitHoldout(opt Options) {
	id, n := shapes(kf.rows)
	nh := 0
	if n >= 2*opt.MinShapes {
		nh = max(1, int(math.Round(opt.HoldoutFraction*float64(n))))
	}
	perm := rand.New(rand.NewPCG(kf.seed^0x686f6c64, 0x666f6c6473)).Perm(n)
	for i, r := range kf.rows {
		if perm[id[i]] < nh {
			kf.hold = append(kf.hold, r)
			continue
		}
		kf.train = append(kf.train, r)
	}
	kf.k = min(opt.Folds, n-nh)
	kf.folds = groupedFolds(kf.train, kf.k, kf.seed)
}

// trainShapes is the number of distinct shapes searched on.
func (kf *keyFit) trainShapes() int {
	_, n := shapes(kf.train)
	return n
}

// searchOwn cross-validates the candidates of a forest of the key's own
// (when it has MinShapes shapes to search on) and the fallback alone, with
// every extrapolation.
func (kf *keyFit) searchOwn(opt Options) error {
	if kf.zero {
		return nil
	}
	kf.fbPred = kf.fitFolds()
	kf.meta.FallbackCV = errorStats(kf.fbPred[0], kf.train)
	if kf.trainShapes() < opt.MinShapes {
		return nil
	}
	kf.ownBy, kf.ownPredBy = make([]*bundle.SearchResult, len(extrapolations)), make([][]float64, len(extrapolations))
	for _, c := range candidates(opt.Trees, kf.seed) {
		pred, err := crossValidate(kf.si, kf.train, kf.folds, kf.k, c.Target, c.Params, opt.Workers)
		if err != nil {
			return err
		}
		kf.candPred = append(kf.candPred, pred)
		for e, mode := range extrapolations {
			c := c
			c.Extrapolation, c.CVMAPE = mode, errorStats(pred[e], kf.train).MAPE
			kf.meta.Search = append(kf.meta.Search, c)
			if kf.ownBy[e] == nil || c.CVMAPE < kf.ownBy[e].CVMAPE {
				kf.ownBy[e], kf.ownPredBy[e] = &c, pred[e]
			}
		}
	}
	return nil
}

// cvOf scores out-of-fold predictions on the key's training rows: NaN when
// any row has none.
func (kf *keyFit) cvOf(pred []float64) float64 {
	if pred == nil {
		return math.NaN()
	}
	for _, p := range pred {
		if math.IsNaN(p) {
			return math.NaN()
		}
	}
	return errorStats(pred, kf.train).MAPE
}

// fallbackModel is the physical fallback alone, fitted on rows: a
// log-ratio model whose forest is one leaf of 0.
func (kf *keyFit) fallbackModel(rows []Row) (*bundle.Model, error) {
	xs := make([][]float64, len(rows))
	y := make([]float64, len(rows))
	minY := math.Inf(1)
	for i, r := range rows {
		xs[i], y[i] = r.X, r.TimeMs
		minY = math.Min(minY, r.TimeMs)
	}
	fb, err := fitFallback(kf.si.op, kf.si.note, kf.si.names, xs, y)
	if err != nil {
		return nil, fmt.Errorf("%s: fallback: %w", kf.si.key, err)
	}
	f := &bundle.Forest{Nodes: []bundle.Node{{Thr: 0, Feat: -1}}, Roots: []int32{0}, NFeat: len(kf.si.names)}
	return bundle.NewModel(bundle.TargetLogRatio, fb, minY/10, bundle.ForestFeatures(kf.si.key.Op), f), nil
}

// holdoutStats scores on the held-out rows the predictor that a model
// trained on the other rows (fallback fb, floor floorMs, answering predict
// in their domain) would make, extrapolating as mode says.
func (kf *keyFit) holdoutStats(fb *bundle.Fallback, floorMs float64, mode string, predict func(x []float64) float64) bundle.ErrorStats {
	if len(kf.hold) == 0 {
		return bundle.ErrorStats{}
	}
	lo, hi := rowDomain(kf.train)
	hp := make([]float64, len(kf.hold))
	for i, r := range kf.hold {
		hp[i] = bundle.Within(r.X, lo, hi, mode, fb, floorMs, predict)
	}
	return errorStats(hp, kf.hold)
}

// finish records the final model (which learned target), answering each
// measured shape with the median of its measurements, and its error on
// every row of the key.
func (kf *keyFit) finish(m *bundle.Model, target string) error {
	var meas []bundle.MeasuredShape
	for _, r := range medianRows(kf.all) {
		meas = append(meas, bundle.MeasuredShape{X: slices.Clone(r.X), Ms: r.TimeMs})
	}
	m, err := m.WithMeasured(meas, len(kf.si.names))
	if err != nil {
		return fmt.Errorf("%s: %w", kf.si.key, err)
	}
	kf.final = m
	pred := make([]float64, len(kf.all))
	for i, r := range kf.all {
		pred[i] = m.Predict(r.X)
	}
	kf.meta.AllRows = errorStats(pred, kf.all)
	kf.meta.Fallback, kf.meta.FloorMs, kf.meta.Nodes = *m.Fallback(), m.FloorMs(), len(m.Forest().Nodes)
	kf.meta.Target = target
	kf.meta.Measured = meas
	return nil
}
