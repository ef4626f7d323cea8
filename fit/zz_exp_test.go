package fit

import (
	"fmt"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestZZMaxFeatures(t *testing.T) {
	ts := trainingSet(t, a800)
	m, _ := spec.LookupModel(ts.Model)
	for _, o := range ts.Ops {
		if len(spec.OpFeatures(o.Key.Op)) < 2 {
			continue
		}
		op, note := opShape(m, o.Key)
		si := shapeInfo{key: o.Key, op: op, note: note, names: spec.OpFeatures(o.Key.Op)}
		rows, _, _ := resolveConflicts(si, o.Rows, 1)
		folds := assignFolds(len(rows), 5, 3)
		line := fmt.Sprintf("%-35s", o.Key)
		for _, tg := range []string{TargetLogRatio, TargetLog} {
			for _, mf := range []float64{1, 0.5} {
				for _, leaf := range []int{1, 3} {
					pred, _ := crossValidate(si, rows, folds, 5, tg, ForestParams{Trees: 100, MaxDepth: 32, MinLeaf: leaf, MaxFeatures: mf, Seed: 1}, 2)
					line += fmt.Sprintf(" %s/mf%.1f/l%d=%.2f", tg[:5], mf, leaf, errorStats(pred, rows).MAPE)
				}
			}
		}
		t.Log(line)
	}
}
