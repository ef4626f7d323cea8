package bundle_test

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
)

// TestWithMeasured: a model answers its measured shapes with their
// measurement, every other shape from its forest, and refuses a table it
// could not answer from.
func TestWithMeasured(t *testing.T) {
	// A forest of one leaf: log time 0, so 1 ms everywhere.
	f := &bundle.Forest{Nodes: []bundle.Node{{Thr: 0, Feat: -1}}, Roots: []int32{0}, NFeat: 2}
	fb := &bundle.Fallback{Basis: bundle.BasisRaw, Terms: []string{"intercept", "a", "b"}, Coef: []float64{1, 0, 0}}
	base := bundle.NewModel(bundle.TargetLog, fb, 0.1, bundle.ForestFeatures("unknown_op"), f)
	shapes := []bundle.MeasuredShape{{X: []float64{4, 1}, Ms: 3}, {X: []float64{2, 8}, Ms: 5}, {X: []float64{2, 1}, Ms: 7}}
	m, err := base.WithMeasured(shapes, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{2, 1}, 7}, {[]float64{2, 8}, 5}, {[]float64{4, 1}, 3},
		{[]float64{2, 2}, 1}, {[]float64{1, 1}, 1}, {[]float64{5, 1}, 1}, {[]float64{4, 1.5}, 1},
		{[]float64{2}, 1}, // wrong width: no measured shape, the forest answers
	} {
		if got := m.Predict(c.x); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Predict(%v) = %g, want %g", c.x, got, c.want)
		}
	}
	if got := m.PredictModel([]float64{2, 1}); math.Abs(got-1) > 1e-12 {
		t.Errorf("PredictModel at a measured shape = %g, want the forest's 1", got)
	}
	if got := base.Predict([]float64{2, 1}); math.Abs(got-1) > 1e-12 {
		t.Errorf("WithMeasured changed the model it was called on: %g", got)
	}
	for _, c := range []struct {
		name   string
		shapes []bundle.MeasuredShape
		d      int
		want   string
	}{
		{"twice", []bundle.MeasuredShape{{X: []float64{1, 1}, Ms: 1}, {X: []float64{1, 1}, Ms: 2}}, 2, "twice"},
		{"width", []bundle.MeasuredShape{{X: []float64{1}, Ms: 1}}, 2, "features"},
		{"zero time", []bundle.MeasuredShape{{X: []float64{1, 1}, Ms: 0}}, 2, "time"},
		{"nan feature", []bundle.MeasuredShape{{X: []float64{math.NaN(), 1}, Ms: 1}}, 2, "feature"},
	} {
		if _, err := base.WithMeasured(c.shapes, c.d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one saying %q", c.name, err, c.want)
		}
	}
}
