package bundle

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/ftk-dev/ftk/spec"
)

// Predictor answers the time of one operator key. It is safe for
// concurrent use.
//
// Inside the sampled domain (every feature within the range the training
// rows spanned) it returns the forest's prediction. Outside, a forest would
// return its edge value; with ExtrapolateFallback (the default) the
// predictor returns the prediction at the nearest in-domain point plus the
// physical fallback's increment from there to the query: continuous at the
// domain edge and growing with the physics beyond it; with ExtrapolateEdge
// the edge value itself; ExtrapolateEdgeAbove and ExtrapolateEdgeBelow
// answer the edge value on one side of the domain and add the increment on
// the other (EdgeSides); ExtrapolateRoof adds the increment of the
// fallback's roofline shape (Fallback.RoofMs) on both sides. Every such
// query is counted (Extrapolated).
type Predictor struct {
	meta *PredictorMeta
	m    *Model
	// once compiles m's lookup grid on the first query (or Bundle.Compile),
	// so loading a bundle does not pay for predictors a run never asks.
	once  sync.Once
	d     int
	lo    [MaxFeatures]float64
	hi    [MaxFeatures]float64
	mode  string
	extra atomic.Int64
}

// NewPredictor is the predictor of meta answering from model m.
func NewPredictor(meta *PredictorMeta, m *Model) *Predictor {
	p := &Predictor{meta: meta, m: m, d: len(meta.Domain), mode: meta.Extrapolation}
	for i, fd := range meta.Domain {
		p.lo[i], p.hi[i] = fd.Min, fd.Max
	}
	return p
}

// Model returns the predictor's model with its grid compiled.
func (p *Predictor) Model() *Model {
	p.once.Do(p.m.Compile)
	return p.m
}

// Key is the operator key the predictor answers.
func (p *Predictor) Key() spec.OpKey { return p.meta.Key }

// Meta describes how the predictor was trained and how well it does.
func (p *Predictor) Meta() *PredictorMeta { return p.meta }

// Features are the predictor's features (spec.OpFeatures order).
func (p *Predictor) Features() []string { return p.meta.Features }

// Domain returns the sampled range of every feature.
func (p *Predictor) Domain() []spec.Range {
	out := make([]spec.Range, p.d)
	for i := range out {
		out[i] = spec.Range{Min: p.lo[i], Max: p.hi[i]}
	}
	return out
}

// Extrapolated returns the number of out-of-domain queries so far.
func (p *Predictor) Extrapolated() int64 { return p.extra.Load() }

// ResetExtrapolated sets the out-of-domain counter back to zero and returns
// its value.
func (p *Predictor) ResetExtrapolated() int64 { return p.extra.Swap(0) }

// PredictMs returns the predicted median time in milliseconds for features
// x (spec.OpFeatures order). Out-of-domain queries extrapolate (see
// Predictor) and are counted.
func (p *Predictor) PredictMs(x []float64) float64 {
	if len(x) != p.d {
		return math.NaN()
	}
	for _, v := range x {
		if v != v {
			return v
		}
	}
	if !p.InDomain(x) {
		p.extra.Add(1)
	}
	return p.PredictUncounted(x)
}

// mode is the predictor's extrapolation.
func (p *Predictor) extrapolation() string {
	if p.mode == "" {
		return ExtrapolateFallback
	}
	return p.mode
}

// InDomain reports whether x lies inside the sampled domain (no counting).
func (p *Predictor) InDomain(x []float64) bool {
	for i, v := range x {
		if !(v >= p.lo[i] && v <= p.hi[i]) {
			return false
		}
	}
	return len(x) == p.d
}

// ForestMs is the model alone at x, clamped to the domain: what a plain
// random forest would answer (its edge value outside the domain; a
// measured shape's measurement).
func (p *Predictor) ForestMs(x []float64) float64 {
	var xc [MaxFeatures]float64
	for i, v := range x {
		xc[i] = math.Min(math.Max(v, p.lo[i]), p.hi[i])
	}
	return p.Model().Predict(xc[:p.d])
}

// FallbackMs is the physical fallback alone at x.
func (p *Predictor) FallbackMs(x []float64) float64 { return p.m.fb.PredictMs(x) }

// PredictUncounted is PredictMs without touching the out-of-domain counter
// (a report on training rows is not a simulation).
func (p *Predictor) PredictUncounted(x []float64) float64 {
	m := p.Model()
	return Within(x, p.lo[:len(x)], p.hi[:len(x)], p.extrapolation(), m.fb, m.floorMs, m.Predict)
}

// PredictWithin is the prediction at x of a predictor whose domain is
// [lo, hi] per feature, extrapolating beyond it as mode says
// (an Extrapolate constant): what a Predictor with that
// domain and mode answers, for scoring a model before its predictor
// exists.
func (m *Model) PredictWithin(x, lo, hi []float64, mode string) float64 {
	return Within(x, lo, hi, mode, m.fb, m.floorMs, m.Predict)
}

// EdgeSides reports on which sides of the domain an extrapolation answers
// the edge value (the others add the fallback's increment).
func EdgeSides(mode string) (below, above bool) {
	switch mode {
	case ExtrapolateEdge:
		return true, true
	case ExtrapolateEdgeAbove:
		return false, true
	case ExtrapolateEdgeBelow:
		return true, false
	}
	return false, false
}

// Within answers x as a Predictor with domain [lo, hi] would when predict
// answers inside that domain and fb is its fallback (floorMs the least it
// extrapolates to): predict(x) inside; outside, predict at the nearest
// in-domain point, plus fb's increment from there to x on the sides
// where mode does not answer the edge value (EdgeSides). An empty domain (lo nil) is no domain: predict(x).
func Within(x, lo, hi []float64, mode string, fb *Fallback, floorMs float64, predict func([]float64) float64) float64 {
	if lo == nil {
		return predict(x)
	}
	var xc [MaxFeatures]float64
	below, above := false, false
	for i, v := range x {
		xc[i] = math.Min(math.Max(v, lo[i]), hi[i])
		below, above = below || v < lo[i], above || v > hi[i]
	}
	if !below && !above {
		return predict(x)
	}
	at := predict(xc[:len(x)])
	if fb == nil {
		return math.Max(at, floorMs)
	}
	// The fallback's increment runs to xe: x on the sides the mode
	// extrapolates by the fallback, the edge on the others.
	edgeBelow, edgeAbove := EdgeSides(mode)
	var xe [MaxFeatures]float64
	up, down := false, false
	for i, v := range x {
		xe[i] = xc[i]
		if (v < lo[i] && !edgeBelow) || (v > hi[i] && !edgeAbove) {
			xe[i] = v
			up, down = up || v > hi[i], down || v < lo[i]
		}
	}
	if !up && !down {
		return math.Max(at, floorMs)
	}
	fbMs := fb.PredictMs
	if mode == ExtrapolateRoof {
		fbMs = fb.RoofMs
	}
	inc := fbMs(xe[:len(x)]) - fbMs(xc[:len(x)])
	switch {
	case up && !down:
		inc = math.Max(inc, 0)
	case down && !up:
		inc = math.Min(inc, 0)
	}
	return math.Max(at+inc, floorMs)
}
