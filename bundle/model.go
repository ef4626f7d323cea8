package bundle

import (
	"math"
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

// Model is a trained forest beside its fallback: the in-domain part of a
// predictor.
type Model struct {
	target string
	fb     *Fallback
	// floorMs bounds the fallback below inside the forest's target, so a
	// fallback that reaches zero on small shapes cannot blow up the ratio.
	floorMs float64
	feats   FeatureSet
	f       *Forest
	g       *Grid
	// meas answers the shapes the model was trained on (nil: none).
	meas *measured
}

// NewModel is a trained forest f, on features feats, beside its fallback
// fb; target says what the forest learned and floorMs bounds the fallback
// below inside a log-ratio target.
func NewModel(target string, fb *Fallback, floorMs float64, feats FeatureSet, f *Forest) *Model {
	return &Model{target: target, fb: fb, floorMs: floorMs, feats: feats, f: f}
}

// WithMeasured returns m answering each of shapes (d features each) with
// its measurement and every other shape as m does.
func (m *Model) WithMeasured(shapes []MeasuredShape, d int) (*Model, error) {
	t, err := newMeasured(shapes, d)
	if err != nil {
		return nil, err
	}
	c := *m
	c.meas = t
	return &c, nil
}

// Fallback is the model's physical fallback.
func (m *Model) Fallback() *Fallback { return m.fb }

// FloorMs is the fallback's lower bound inside a log-ratio target.
func (m *Model) FloorMs() float64 { return m.floorMs }

// Forest is the model's forest.
func (m *Model) Forest() *Forest { return m.f }

// Compile builds the lookup grid when the forest splits on base features
// and the grid is small enough (predictors only: models that predict a few
// cross-validation rows walk their trees).
func (m *Model) Compile() {
	if m.feats.engineer == nil {
		m.g = CompileGrid(m.f)
	}
}

// Base is the floored fallback time.
func (m *Model) Base(x []float64) float64 { return math.Max(m.fb.PredictMs(x), m.floorMs) }

// Predict returns the model's time for x (ms): the measurement of a
// measured shape, else the forest's answer.
func (m *Model) Predict(x []float64) float64 {
	if ms, ok := m.meas.lookup(x); ok {
		return ms
	}
	return m.PredictModel(x)
}

// PredictModel is the forest's answer for x (ms), measured shape or not.
func (m *Model) PredictModel(x []float64) float64 {
	var r float64
	if m.g != nil {
		r = m.g.Predict(x)
	} else {
		var buf [MaxFeatures]float64
		r = m.f.Predict(m.feats.Apply(x, &buf))
	}
	switch m.target {
	case TargetLogRatio:
		return m.Base(x) * math.Exp(r)
	case TargetLog:
		return math.Exp(r)
	case TargetZero:
		return 0
	}
	return r
}
