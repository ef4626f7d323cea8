package fit

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Targets: what a forest learns.
const (
	// TargetLogRatio is log(median_ms / fallback_ms): the forest corrects
	// the physical model multiplicatively. The default.
	TargetLogRatio = "log_ratio_to_fallback"
	// TargetLog is log(median_ms).
	TargetLog = "log_ms"
	// TargetRaw is median_ms itself, as the anchors train.
	TargetRaw = "ms"
	// TargetZero: every row took 0 ms (no kernel in a KERNEL_ONLY
	// profile); the predictor answers 0.
	TargetZero = "zero"
)

// model is a trained forest beside its fallback: the in-domain part of a
// predictor.
type model struct {
	target string
	fb     *Fallback
	// floorMs bounds the fallback below inside the forest's target, so a
	// fallback that reaches zero on small shapes cannot blow up the ratio.
	floorMs float64
	feats   featureSet
	f       *forest
	g       *grid
}

// shapeInfo is what a model needs to know about its operator besides rows.
type shapeInfo struct {
	key   spec.OpKey
	op    *spec.Op // nil: raw-feature fallback
	note  string   // why op is nil
	names []string // base features
}

// trainModel fits the fallback and the forest on rows.
func trainModel(si shapeInfo, rows []Row, target string, p ForestParams, workers int) (*model, error) {
	xs := make([][]float64, len(rows))
	y := make([]float64, len(rows))
	minY := math.Inf(1)
	for i, r := range rows {
		xs[i], y[i] = r.X, r.TimeMs
		minY = math.Min(minY, r.TimeMs)
	}
	fb, err := fitFallback(si.op, si.note, si.names, xs, y)
	if err != nil {
		return nil, fmt.Errorf("%s: fallback: %w", si.key, err)
	}
	m := &model{target: target, fb: fb, floorMs: minY / 10, feats: forestFeatures(si.key.Op)}
	fx := make([][]float64, len(rows))
	ty := make([]float64, len(rows))
	for i, x := range xs {
		var buf [maxFeatures]float64
		fx[i] = append([]float64(nil), m.feats.apply(x, &buf)...)
		switch target {
		case TargetLogRatio:
			ty[i] = math.Log(y[i] / m.base(x))
		case TargetLog:
			ty[i] = math.Log(y[i])
		default:
			ty[i] = y[i]
		}
	}
	m.f, err = trainForest(fx, ty, p, workers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", si.key, err)
	}
	return m, nil
}

// compile builds the lookup grid when the forest splits on base features
// and the grid is small enough (predictors only: models that predict a few
// cross-validation rows walk their trees).
func (m *model) compile() {
	if m.feats.engineer == nil {
		m.g = compileGrid(m.f)
	}
}

// base is the floored fallback time.
func (m *model) base(x []float64) float64 { return math.Max(m.fb.PredictMs(x), m.floorMs) }

// predict returns the model's time for x (ms).
func (m *model) predict(x []float64) float64 {
	var r float64
	if m.g != nil {
		r = m.g.predict(x)
	} else {
		var buf [maxFeatures]float64
		r = m.f.predict(m.feats.apply(x, &buf))
	}
	switch m.target {
	case TargetLogRatio:
		return m.base(x) * math.Exp(r)
	case TargetLog:
		return math.Exp(r)
	case TargetZero:
		return 0
	}
	return r
}
