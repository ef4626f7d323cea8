package fit

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// TestFewShapeKeysDecideTogether fits the H800 llama2 KERNEL_ONLY linear
// operators (4 TP keys of 8 shapes each: too few for a holdout): every
// operator's keys take the kind of model whose CV error, summed over their
// rows, is least (recomputed here from each key's recorded choices), and
// those with a forest of their own share its target and leaf size; an
// operator of one key (emb, the layer norms) chooses alone, and so do the
// A800 attention keys (hundreds of shapes).
func TestFewShapeKeysDecideTogether(t *testing.T) {
	ds := loadProfiles(t, "frontier-h800/llama2_7b_dense_example")
	ts, err := FromDataset(ds, spec.KernelOnly)
	if err != nil {
		t.Fatal(err)
	}
	var ops []OpRows
	for _, o := range ts.Ops {
		if spec.OpFamily(o.Key.Op) == spec.FamilyLinear {
			ops = append(ops, o)
		}
	}
	ts.Ops = ops
	b, err := Fit(ts, Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	byOp := map[string][]bundle.PredictorMeta{}
	for _, k := range b.Keys() {
		p, _ := b.Predictor(k)
		byOp[k.Op] = append(byOp[k.Op], *p.Meta())
	}
	if len(b.Meta().Conditions) < 5 {
		t.Fatalf("%d linear operators, want at least 5", len(b.Meta().Conditions))
	}
	for _, c := range b.Meta().Conditions {
		metas := byOp[c.Op]
		if c.Keys < 2 {
			if c.FewShapeKeys != 0 || c.FewShapesModel != "" {
				t.Errorf("%s: one key, %d counted as deciding together on %q; a key alone chooses alone", c.Op, c.FewShapeKeys, c.FewShapesModel)
			}
			continue
		}
		if c.FewShapeKeys != c.Keys {
			t.Errorf("%s: %d of %d keys counted as few-shape, want all (8 shapes each)", c.Op, c.FewShapeKeys, c.Keys)
			continue
		}
		sum := map[string]float64{}
		for _, m := range metas {
			least, of := math.Inf(1), map[string]float64{}
			for _, ch := range m.Choices {
				if ch.Extrapolation == c.Extrapolation && !math.IsNaN(ch.CVMAPE) {
					of[ch.Model] = ch.CVMAPE
					least = math.Min(least, ch.CVMAPE)
				}
			}
			for _, kind := range []string{bundle.ModelForest, bundle.ModelPooled, bundle.ModelFallback} {
				v, ok := of[kind]
				if !ok {
					v = least
				}
				sum[kind] += v * float64(m.TrainRows)
			}
			if m.Model != c.FewShapesModel {
				if _, ok := of[c.FewShapesModel]; ok {
					t.Errorf("%s: answered by %s, the operator's few-shape keys share %s", m.Key, m.Model, c.FewShapesModel)
				}
			}
		}
		for kind, v := range sum {
			if v < sum[c.FewShapesModel]*(1-1e-9) {
				t.Errorf("%s: shared model %s (summed CV %.3f), %s sums %.3f", c.Op, c.FewShapesModel, sum[c.FewShapesModel], kind, v)
			}
		}
		var shared *bundle.ForestParams
		var target string
		for _, m := range metas {
			if m.Model != bundle.ModelForest {
				continue
			}
			if shared == nil {
				shared, target = &m.Params, m.Target
				continue
			}
			if m.Params.MinLeaf != shared.MinLeaf || m.Target != target {
				t.Errorf("%s: forest %s min leaf %d, another key's %s min leaf %d: few-shape keys share one candidate", m.Key, m.Target, m.Params.MinLeaf, target, shared.MinLeaf)
			}
		}
	}

	a := trainingSet(t, a800)
	var att []OpRows
	for _, o := range a.Ops {
		if o.Key.Op == spec.OpAttnPrefill {
			att = append(att, o)
		}
	}
	a.Ops = att
	ab, err := Fit(a, Options{Seed: 1, Trees: 16})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ab.Meta().Conditions {
		if c.FewShapeKeys != 0 || c.FewShapesModel != "" {
			t.Errorf("A800 %s: %d few-shape keys sharing %q, want none", c.Op, c.FewShapeKeys, c.FewShapesModel)
		}
	}
}
