package fit

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

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
	// Folds is k of the k-fold cross-validation (default 5). Folds group
	// the measurements of one shape.
	Folds int
	// HoldoutFraction of each key's shapes is held out of the search and
	// reported separately (default 0.15; none below 2*MinShapes shapes).
	HoldoutFraction float64
	// Trees per forest (default 64: on the A800 profiles 50, 64 and 100
	// trees give the same nested-CV MAPE within 0.05 points on average).
	Trees int
	// MinShapes is the fewest distinct shapes a key needs for a forest of
	// its own (default: Folds). A thinner key gets the forest pooled over
	// its operator's keys or the physical fallback, whichever
	// cross-validates better on its rows, and is marked.
	MinShapes int
	// Repeats is RepeatsAll (default) or RepeatsMedian.
	Repeats string
	// Workers bounds the goroutines that train trees (default GOMAXPROCS).
	Workers int
	// Log receives one line per predictor, thin keys and disagreeing
	// sweeps.
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
	if o.MinShapes == 0 {
		o.MinShapes = o.Folds
	}
	if o.Repeats == "" {
		o.Repeats = bundle.RepeatsAll
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
}

func (o *Options) validate() error {
	switch {
	case o.Folds < 2:
		return fmt.Errorf("fit: %d folds; cross-validation needs at least 2", o.Folds)
	case o.MinShapes < 2:
		return fmt.Errorf("fit: min shapes %d; a forest of its own needs at least 2 shapes to cross-validate", o.MinShapes)
	case o.Trees < 1:
		return fmt.Errorf("fit: %d trees; give at least 1", o.Trees)
	case o.Repeats != bundle.RepeatsAll && o.Repeats != bundle.RepeatsMedian:
		return fmt.Errorf("fit: repeats %q: use %s or %s", o.Repeats, bundle.RepeatsAll, bundle.RepeatsMedian)
	}
	return nil
}

// maxDepth bounds every tree; deep enough that no data set here reaches it.
const maxDepth = 32

// candidates is the hyperparameter search of a key's own forest: the
// target (log ratio to the fallback, or log time) and the minimum leaf
// size. The number of trees and the depth limit are fixed (more trees only
// reduce variance). Every feature is a split candidate at every node: with
// two features, drawing one at random per split raised the CV MAPE of
// every A800 attention predictor (prefill at TP4 from 4.7% to 9.3%).
func candidates(trees int, seed uint64) []bundle.SearchResult {
	var out []bundle.SearchResult
	for _, target := range []string{bundle.TargetLogRatio, bundle.TargetLog} {
		for _, leaf := range []int{1, 3} {
			out = append(out, bundle.SearchResult{Target: target, Params: bundle.ForestParams{Trees: trees, MaxDepth: maxDepth, MinLeaf: leaf, MaxFeatures: 1, Seed: seed}})
		}
	}
	return out
}

// ErrNoRows reports a training set without a single row.
var ErrNoRows = errors.New("no usable rows to fit")

// Fit trains one predictor per operator key of ts. Keys too thin for a
// forest of their own get a pooled forest or the physical fallback and
// are marked; only a training set without rows fails.
func Fit(ts *TrainingSet, opt Options) (*bundle.Bundle, error) {
	opt.defaults()
	if ts == nil || len(ts.Ops) == 0 {
		return nil, errors.New("fit: the training set is empty")
	}
	if err := opt.validate(); err != nil {
		return nil, err
	}
	n := 0
	for _, o := range ts.Ops {
		n += len(o.Rows)
	}
	if n == 0 {
		return nil, fmt.Errorf("fit: %w: %d operator keys, none with a row (check the dataset's measurement type)", ErrNoRows, len(ts.Ops))
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
		ProfilingBackends: ts.Backends, MeasuredAt: ts.MeasuredAt, BlockSizes: ts.BlockSizes,
		Seed: opt.Seed, Folds: opt.Folds, HoldoutFraction: opt.HoldoutFraction,
		Repeats: opt.Repeats, DisagreeRatio: bundle.DisagreeRatio, MinShapes: opt.MinShapes,
		Prediction: predictionNote,
	}
	if arch != nil {
		meta.PhysicsModel = arch.Name
	}
	kfs := make([]*keyFit, len(ts.Ops))
	for i, o := range ts.Ops {
		if o.Key.Measurement != ts.Measurement {
			return nil, fmt.Errorf("fit: %s is not a %s predictor; one bundle holds one measurement type", o.Key, ts.Measurement)
		}
		kf, err := newKeyFit(arch, o, opt)
		if err != nil {
			return nil, err
		}
		if err := kf.searchOwn(opt); err != nil {
			return nil, err
		}
		kfs[i] = kf
	}
	for _, fam := range families(kfs) {
		choice, err := fitFamily(fam, opt)
		if err != nil {
			return nil, err
		}
		meta.Conditions = append(meta.Conditions, choice)
	}
	ms := make([]*bundle.Model, len(kfs))
	kernels := map[string]bool{}
	for i, kf := range kfs {
		kf.meta.KernelSources = ts.Ops[i].KernelSources
		for _, k := range kf.meta.KernelSources {
			kernels[k] = true
		}
		meta.Predictors = append(meta.Predictors, *kf.meta)
		ms[i] = kf.final
		fmt.Fprintf(opt.Log, "%s\n", summaryLine(kf.meta))
	}
	for k := range kernels {
		meta.KernelSources = append(meta.KernelSources, k)
	}
	slices.Sort(meta.KernelSources)
	fmt.Fprintf(opt.Log, "kernels: %s\n", spec.KernelSourcesLabel(meta.KernelSources))
	return bundle.New(meta, ms), nil
}

// predictionNote says how predictors are evaluated (BundleMeta.Prediction).
const predictionNote = "a forest on base features is compiled, on its predictor's first query, into an exact lookup grid (one cell per product of split-threshold intervals, one binary search per feature per query); a larger one walks its flattened node array"

// summaryLine is the one-line report of a fitted predictor, with what
// was thin, pooled, disagreeing or left out on the lines below.
func summaryLine(m *bundle.PredictorMeta) string {
	s := fmt.Sprintf("%-55s rows=%-5d model=%-8s all_rows=%s cv=%s holdout=%s noise=%.2f%% fallback_cv=%s",
		m.Key, m.Rows, m.Model, pct(m.AllRows), pct(m.CV), pct(m.Holdout), m.Repeats.NoiseFloorPct, pct(m.FallbackCV))
	if m.Note != "" {
		s += "\n    " + m.Note
	}
	if r := m.Repeats.String(); r != "" && m.Repeats.Disagreeing > 0 {
		s += "\n    " + r
	}
	for _, g := range m.Groups {
		if math.IsNaN(g.Ratio) || g.Ratio > bundle.DisagreeRatio || g.Ratio < 1/bundle.DisagreeRatio {
			s += "\n    " + g.Describe(m.PrimaryGroup)
		}
	}
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
		Model: bundle.ModelZero, Choices: []bundle.ModelChoice{},
		Domain: featureDomains(names, rows), Rows: len(rows), TrainRows: len(rows), Dropped: []bundle.Dropped{},
		Params: bundle.ForestParams{Trees: 1, MaxDepth: 1, MinLeaf: 1, MaxFeatures: 1}, Search: []bundle.SearchResult{},
		Fallback: *fb, Nodes: 1, Measured: []bundle.MeasuredShape{}}
	return meta, bundle.NewModel(bundle.TargetZero, fb, 0, bundle.ForestFeatures(k.Op), f), nil
}

// foldFit is what a key's predictor trained outside one fold would know
// beyond its forest: the domain of those rows (lo nil: none) and the
// fallback fitted on them (nil: none could be) with its floor.
type foldFit struct {
	lo, hi  []float64
	fb      *bundle.Fallback
	floorMs float64
}

// within answers x as the key's predictor trained outside the fold would,
// predict answering inside the domain.
func (ff foldFit) within(x []float64, mode string, predict func([]float64) float64) float64 {
	return bundle.Within(x, ff.lo, ff.hi, mode, ff.fb, ff.floorMs, predict)
}

// fitFolds fits the fallback outside every fold of the key's training
// rows (k of them) and returns its out-of-fold predictions, one slice per
// extrapolation (NaN where a fold leaves nothing to fit it on).
func (kf *keyFit) fitFolds() [][]float64 {
	pred := make([][]float64, len(extrapolations))
	for e := range pred {
		pred[e] = make([]float64, len(kf.train))
	}
	kf.foldFits = make([]foldFit, kf.k)
	for f := 0; f < kf.k; f++ {
		train, test := splitFold(kf.train, kf.folds, f)
		ff := &kf.foldFits[f]
		ff.lo, ff.hi = rowDomain(train)
		var xs [][]float64
		var ys []float64
		minY := math.Inf(1)
		for _, r := range train {
			xs, ys = append(xs, r.X), append(ys, r.TimeMs)
			minY = math.Min(minY, r.TimeMs)
		}
		if len(xs) > 0 {
			if fb, err := fitFallback(kf.si.op, kf.si.note, kf.si.names, xs, ys); err == nil {
				ff.fb, ff.floorMs = fb, minY/10
			}
		}
		for e, mode := range extrapolations {
			for _, i := range test {
				pred[e][i] = math.NaN()
				if ff.fb != nil {
					pred[e][i] = ff.within(kf.train[i].X, mode, func(x []float64) float64 { return math.Max(ff.fb.PredictMs(x), ff.floorMs) })
				}
			}
		}
	}
	return pred
}
