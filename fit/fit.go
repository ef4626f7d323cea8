package fit

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// Options control a fit.
type Options struct {
	// Model gives the operator shapes for the physical fallbacks. When nil
	// the training set's model is looked up in the catalog; when that
	// fails the fallbacks are linear in the raw features (and say so).
	Model *spec.Model
	// Seed makes the fit reproducible (folds, holdout, bootstrap draws).
	Seed uint64
	// Folds is k of the k-fold cross-validation (default 5).
	Folds int
	// HoldoutFraction of each predictor's rows is held out of the search
	// and reported separately (default 0.15; none below 2*MinRows rows).
	HoldoutFraction float64
	// Trees per forest (default 64: on the A800 profiles 50, 64 and 100
	// trees give the same nested-CV MAPE within 0.05 points on average).
	Trees int
	// MinRows is the fewest rows a predictor is fitted on (default: Folds).
	MinRows int
	// Workers bounds the goroutines that train trees (default GOMAXPROCS).
	Workers int
	// Log receives one line per predictor and every dropped row group.
	Log io.Writer
}

func (o *Options) defaults() {
	if o.Folds == 0 {
		o.Folds = 5
	}
	if o.HoldoutFraction == 0 {
		o.HoldoutFraction = 0.15
	}
	if o.Trees == 0 {
		o.Trees = 64
	}
	if o.MinRows == 0 {
		o.MinRows = o.Folds
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

// maxDepth bounds every tree; deep enough that no data set here reaches it.
const maxDepth = 32

// candidates is the hyperparameter search: the target (log ratio to the
// fallback, or log time) and the minimum leaf size. The number of trees
// and the depth limit are fixed (more trees only reduce variance). Every
// feature is a split candidate at every node: with two features, drawing
// one at random per split raised the CV MAPE of every A800 attention
// predictor (prefill at TP4 from 4.7% to 9.3%).
func candidates(trees int, seed uint64) []bundle.SearchResult {
	var out []bundle.SearchResult
	for _, target := range []string{bundle.TargetLogRatio, bundle.TargetLog} {
		for _, leaf := range []int{1, 3} {
			out = append(out, bundle.SearchResult{Target: target, Params: bundle.ForestParams{Trees: trees, MaxDepth: maxDepth, MinLeaf: leaf, MaxFeatures: 1, Seed: seed}})
		}
	}
	return out
}

// ErrTooFewRows reports predictors with too few rows to fit.
var ErrTooFewRows = errors.New("too few rows to fit")

// Fit trains one predictor per operator key of ts.
func Fit(ts *TrainingSet, opt Options) (*bundle.Bundle, error) {
	opt.defaults()
	if ts == nil || len(ts.Ops) == 0 {
		return nil, errors.New("fit: the training set is empty")
	}
	if opt.Folds < 2 {
		return nil, fmt.Errorf("fit: %d folds; cross-validation needs at least 2", opt.Folds)
	}
	if opt.MinRows < opt.Folds {
		return nil, fmt.Errorf("fit: min rows %d is below the %d folds", opt.MinRows, opt.Folds)
	}
	var thin []string
	for _, o := range ts.Ops {
		if len(o.Rows) < opt.MinRows {
			thin = append(thin, fmt.Sprintf("%s has %d rows", o.Key, len(o.Rows)))
		}
	}
	if len(thin) > 0 {
		return nil, fmt.Errorf("fit: %w (at least %d each): %s", ErrTooFewRows, opt.MinRows, strings.Join(thin, "; "))
	}
	arch := opt.Model
	if arch == nil && ts.Model != "" {
		if m, err := spec.LookupModel(ts.Model); err == nil {
			arch = m
		} else {
			fmt.Fprintf(opt.Log, "fit: model %q is not in the catalog: fallbacks are linear in the raw features (give --model)\n", ts.Model)
		}
	}
	checksum := ts.Checksum
	if checksum == "" {
		checksum = ts.computeChecksum()
	}
	meta := bundle.Meta{
		Format: bundle.Format, SchemaVersion: bundle.SchemaVersion,
		Device: ts.Device, Model: ts.Model, Measurement: ts.Measurement, DataChecksum: checksum,
		Seed: opt.Seed, Folds: opt.Folds, HoldoutFraction: opt.HoldoutFraction, ConflictRatio: ConflictRatio,
		Prediction: predictionNote,
	}
	if arch != nil {
		meta.PhysicsModel = arch.Name
	}
	var ms []*bundle.Model
	for _, o := range ts.Ops {
		if o.Key.Measurement != ts.Measurement {
			return nil, fmt.Errorf("fit: %s is not a %s predictor; one bundle holds one measurement type", o.Key, ts.Measurement)
		}
		pm, m, err := fitOne(arch, o, opt)
		if err != nil {
			return nil, err
		}
		meta.Predictors = append(meta.Predictors, *pm)
		ms = append(ms, m)
		fmt.Fprintf(opt.Log, "%s\n", summaryLine(pm))
	}
	return bundle.New(meta, ms), nil
}

// predictionNote says how predictors are evaluated (bundle.Meta.Prediction).
const predictionNote = "a forest on base features is compiled, on its predictor's first query, into an exact lookup grid (one cell per product of split-threshold intervals, one binary search per feature per query); a larger one walks its flattened node array"

// summaryLine is the one-line report of a fitted predictor.
func summaryLine(m *bundle.PredictorMeta) string {
	s := fmt.Sprintf("%-55s rows=%-5d target=%-22s min_leaf=%d cv=%.2f%% holdout=%s fallback_cv=%.2f%%",
		m.Key, m.Rows, m.Target, m.Params.MinLeaf, m.CV.MAPE, pct(m.Holdout), m.FallbackCV.MAPE)
	for _, d := range m.Dropped {
		s += "\n    " + d.String()
	}
	if m.Fallback.Note != "" {
		s += "\n    " + m.Fallback.Note
	}
	return s
}

func pct(e bundle.ErrorStats) string {
	if e.Rows == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", e.MAPE)
}

// fitOne trains the predictor of one key: resolve conflicting rows, hold
// out a split, search the candidates by k-fold CV, score the chosen one on
// the holdout, and train the final model on every kept row.
func fitOne(m *spec.Model, o OpRows, opt Options) (*bundle.PredictorMeta, *bundle.Model, error) {
	seed := keySeed(opt.Seed, o.Key.String())
	op, note := bundle.OpShape(m, o.Key)
	names := spec.OpFeatures(o.Key.Op)
	si := shapeInfo{key: o.Key, op: op, note: note, names: names}
	for _, r := range o.Rows {
		if len(r.X) != len(names) {
			return nil, nil, fmt.Errorf("fit: %s:%d: %s has %d features, want %d (%s)", r.Source, r.Line, o.Key, len(r.X), len(names), strings.Join(names, ", "))
		}
		if len(names) > bundle.MaxFeatures {
			return nil, nil, fmt.Errorf("fit: %s has %d features, at most %d", o.Key, len(names), bundle.MaxFeatures)
		}
		for j, v := range r.X {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("fit: %s:%d: %s feature %s is %v", r.Source, r.Line, o.Key, names[j], v)
			}
		}
		if !(r.TimeMs >= 0) || math.IsInf(r.TimeMs, 0) {
			return nil, nil, fmt.Errorf("fit: %s:%d: %s time %v ms is not a time", r.Source, r.Line, o.Key, r.TimeMs)
		}
	}
	rows, zero := positiveRows(o.Rows)
	if len(rows) == 0 {
		return zeroPredictor(o.Key, names, zero)
	}
	rows, dropped, err := resolveConflicts(si, rows, seed)
	if err != nil {
		return nil, nil, err
	}
	if len(zero) > 0 {
		dropped = append([]bundle.Dropped{{Reason: bundle.DropZero, Group: zero[0].Group, Rows: len(zero), Ratio: math.NaN(), Lines: firstLines(zero)}}, dropped...)
	}
	if len(rows) < opt.MinRows {
		return nil, nil, fmt.Errorf("fit: %w: %s keeps %d of %d rows after dropping conflicting ones (at least %d): %v",
			ErrTooFewRows, o.Key, len(rows), len(o.Rows), opt.MinRows, dropped)
	}
	// Hold out a split when there is enough left to search on.
	var train, hold []Row
	nh := 0
	if len(rows) >= 2*opt.MinRows {
		nh = max(1, int(math.Round(opt.HoldoutFraction*float64(len(rows)))))
	}
	perm := assignFolds(len(rows), len(rows), seed^0x686f6c64) // a permutation
	for i, r := range rows {
		if perm[i] < nh {
			hold = append(hold, r)
		} else {
			train = append(train, r)
		}
	}
	folds := assignFolds(len(train), opt.Folds, seed)
	meta := &bundle.PredictorMeta{Key: o.Key, Features: names, ForestFeatures: bundle.ForestFeatures(o.Key.Op).Names(),
		Domain: featureDomains(names, rows), Rows: len(rows), Dropped: dropped}
	best := -1
	for _, c := range candidates(opt.Trees, seed) {
		pred, err := crossValidate(si, train, folds, opt.Folds, c.Target, c.Params, opt.Workers)
		if err != nil {
			return nil, nil, err
		}
		st := errorStats(pred, train)
		c.CVMAPE = st.MAPE
		meta.Search = append(meta.Search, c)
		if best < 0 || c.CVMAPE < meta.Search[best].CVMAPE {
			best, meta.CV = len(meta.Search)-1, st
		}
	}
	chosen := meta.Search[best]
	meta.Target, meta.Params = chosen.Target, chosen.Params
	meta.FallbackCV = errorStats(fallbackCV(si, train, folds, opt.Folds), train)
	if len(hold) > 0 {
		hm, err := trainModel(si, train, chosen.Target, chosen.Params, opt.Workers)
		if err != nil {
			return nil, nil, err
		}
		hp := make([]float64, len(hold))
		for i, r := range hold {
			hp[i] = hm.Predict(r.X)
		}
		meta.Holdout = errorStats(hp, hold)
	}
	final, err := trainModel(si, rows, chosen.Target, chosen.Params, opt.Workers)
	if err != nil {
		return nil, nil, err
	}
	meta.Fallback, meta.FloorMs, meta.Nodes = *final.Fallback(), final.FloorMs(), len(final.Forest().Nodes)
	return meta, final, nil
}

// positiveRows splits rows into those with a positive time and those of 0
// ms.
func positiveRows(rows []Row) (pos, zero []Row) {
	for _, r := range rows {
		if r.TimeMs > 0 {
			pos = append(pos, r)
		} else {
			zero = append(zero, r)
		}
	}
	return pos, zero
}

// zeroPredictor is the predictor of an operator every row of which took 0
// ms: a view or reshape launches no kernel, so a KERNEL_ONLY profile
// measures nothing. It answers 0 everywhere.
func zeroPredictor(k spec.OpKey, names []string, rows []Row) (*bundle.PredictorMeta, *bundle.Model, error) {
	fb := &bundle.Fallback{Basis: bundle.BasisRaw, Terms: append([]string{"intercept"}, names...), Coef: make([]float64, 1+len(names)),
		Note: "every row took 0 ms: the operator costs nothing in this measurement"}
	f := &bundle.Forest{Nodes: []bundle.Node{{Thr: 0, Feat: -1}}, Roots: []int32{0}, NFeat: len(names)}
	meta := &bundle.PredictorMeta{Key: k, Features: names, ForestFeatures: bundle.ForestFeatures(k.Op).Names(), Target: bundle.TargetZero,
		Domain: featureDomains(names, rows), Rows: len(rows), Dropped: []bundle.Dropped{},
		Params: bundle.ForestParams{Trees: 1, MaxDepth: 1, MinLeaf: 1, MaxFeatures: 1}, Search: []bundle.SearchResult{},
		Fallback: *fb, Nodes: 1}
	return meta, bundle.NewModel(bundle.TargetZero, fb, 0, bundle.ForestFeatures(k.Op), f), nil
}

// fallbackCV returns out-of-fold predictions of the fallback alone.
func fallbackCV(si shapeInfo, rows []Row, folds []int, k int) []float64 {
	pred := make([]float64, len(rows))
	for f := 0; f < k; f++ {
		var xs [][]float64
		var ys []float64
		for i, r := range rows {
			if folds[i] != f {
				xs, ys = append(xs, r.X), append(ys, r.TimeMs)
			}
		}
		fb, err := fitFallback(si.op, si.note, si.names, xs, ys)
		for i, r := range rows {
			if folds[i] == f {
				pred[i] = math.NaN()
				if err == nil {
					pred[i] = fb.PredictMs(r.X)
				}
			}
		}
	}
	return pred
}
