package fit

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// TestMeasuredShapesAnswerTheirMedian: on real profiles with repeats
// (H800 Qwen3 kernel-only attention: 17 KV-cache-save shapes measured 146
// times), the written and reloaded bundle answers every measured shape with
// the median of its measurements whatever model CV chose, so the all-rows
// error is the noise floor of the repeats; shapes never measured are
// answered by the chosen model.
func TestMeasuredShapesAnswerTheirMedian(t *testing.T) {
	ds := loadProfiles(t, "frontier-h800/Qwen3-30B-A3B-tiny")
	ts, err := FromDataset(ds, spec.KernelOnly)
	if err != nil {
		t.Fatal(err)
	}
	var keep []OpRows
	for _, o := range ts.Ops {
		if o.Key.Op == spec.OpAttnKVCacheSave || o.Key.Op == spec.OpAttnPreProj {
			keep = append(keep, o)
		}
	}
	ts.Ops = keep
	fitted, err := Fit(ts, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "b.arrow")
	if err := fitted.Write(path); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	repeated := 0
	for _, o := range ts.Ops {
		p, _ := b.Predictor(o.Key)
		m := p.Meta()
		id, n := shapes(o.Rows)
		times := make([][]float64, n)
		x := make([][]float64, n)
		for i, s := range id {
			times[s], x[s] = append(times[s], o.Rows[i].TimeMs), o.Rows[i].X
		}
		if len(m.Measured) != n {
			t.Errorf("%s: %d measured shapes, want %d", o.Key, len(m.Measured), n)
		}
		for s := range times {
			slices.Sort(times[s])
			if len(times[s]) > 1 {
				repeated++
			}
			if got, want := p.PredictUncounted(x[s]), quantile(times[s], 0.5); got != want {
				t.Errorf("%s %v: predicted %g ms, the median of its %d measurements is %g", o.Key, x[s], got, len(times[s]), want)
			}
		}
		if math.Abs(m.AllRows.MAPE-m.Repeats.NoiseFloorPct) > 1e-9 {
			t.Errorf("%s: all-rows error %.4f%%, noise floor %.4f%%: they are the same rows against the same medians", o.Key, m.AllRows.MAPE, m.Repeats.NoiseFloorPct)
		}
		// Between two measured values of the first feature the model answers.
		d := m.Domain[0].Values
		if len(d) > 1 && d[1]-d[0] > 1 {
			q := slices.Clone(x[0])
			q[0] = math.Floor(d[0] + (d[1]-d[0])/2)
			if got, want := p.PredictUncounted(q), p.Model().PredictModel(q); got != want {
				t.Errorf("%s %v (not measured): %g, the model says %g", o.Key, q, got, want)
			}
		}
	}
	if repeated == 0 {
		t.Fatal("no shape measured twice: the fixture no longer tests repeats")
	}
}
