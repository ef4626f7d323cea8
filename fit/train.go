package fit

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// shapeInfo is what a model needs to know about its operator besides rows.
type shapeInfo struct {
	key   spec.OpKey
	op    *spec.Op // nil: raw-feature fallback
	note  string   // why op is nil
	names []string // base features
}

// trainModel fits the fallback and the forest on rows.
func trainModel(si shapeInfo, rows []Row, target string, p bundle.ForestParams, workers int) (*bundle.Model, error) {
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
	floorMs, feats := minY/10, bundle.ForestFeatures(si.key.Op)
	fx := make([][]float64, len(rows))
	ty := make([]float64, len(rows))
	for i, x := range xs {
		var buf [bundle.MaxFeatures]float64
		fx[i] = append([]float64(nil), feats.Apply(x, &buf)...)
		switch target {
		case bundle.TargetLogRatio:
			ty[i] = math.Log(y[i] / math.Max(fb.PredictMs(x), floorMs))
		case bundle.TargetLog:
			ty[i] = math.Log(y[i])
		default:
			ty[i] = y[i]
		}
	}
	f, err := trainForest(fx, ty, p, workers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", si.key, err)
	}
	return bundle.NewModel(target, fb, floorMs, feats, f), nil
}
