package fit

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// conflictRows are prefill rows of a known time: a single-sequence sweep,
// a replicate within 2%, a second sweep 1.8x slower on half the shapes, a
// mixed-batch group 1.9x slower, a consistent group and a row far outside.
func conflictRows() []Row {
	truth := func(kv, c float64) float64 { return 0.01 + 1e-7*c*(kv+c/2) + 1e-5*c }
	var rows []Row
	line := 1
	add := func(group string, kv, c, factor float64) {
		line++
		rows = append(rows, Row{X: []float64{kv, c}, TimeMs: truth(kv, c) * factor, Group: group, Source: "a.csv", Line: line})
	}
	for c := 32.0; c <= 2048; c += 32 {
		add(bundle.PrimaryGroup, 0, c, 1)
		add(bundle.PrimaryGroup, 1024, c, 1.02) // a replicate within the ratio
		if c <= 1024 {
			add(bundle.PrimaryGroup, 0, c, 1.8) // a second sweep, 1.8x slower
		}
	}
	for c := 64.0; c <= 1024; c += 64 {
		add(groupMixed, 512, c, 1.9) // batched prefill, slower than its equivalent
		add("consistent", 0, c+16, 1.05)
	}
	add("outside", 1e6, 1e6, 1) // nothing to compare it with
	return rows
}

func TestGroupRatios(t *testing.T) {
	m, _ := spec.LookupModel("qwen3-30b-a3b")
	k := spec.OpKey{Op: spec.OpAttnPrefill, Measurement: spec.CUDAEvent, TP: 4}
	op, note := bundle.OpShape(m, k)
	si := shapeInfo{key: k, op: op, note: note, names: spec.OpFeatures(k.Op)}
	primary, groups, err := groupRatios(si, conflictRows(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if primary != bundle.PrimaryGroup {
		t.Errorf("primary group %q", primary)
	}
	by := map[string]bundle.GroupRatio{}
	for _, g := range groups {
		by[g.Group] = g
		t.Log(g.Describe(primary))
	}
	if g := by[groupMixed]; g.Rows != 16 || g.Ratio < 1.5 {
		t.Errorf("mixed group: %+v", g)
	}
	if g := by["consistent"]; g.Rows != 16 || math.Abs(g.Ratio-1) > 0.25 {
		t.Errorf("consistent group: %+v", g)
	}
	if g := by["outside"]; !math.IsNaN(g.Ratio) || !strings.Contains(g.Describe(primary), "no row inside") {
		t.Errorf("group outside the domain: %+v", g)
	}
}

// TestFitKeepsEveryRow: repeats 1.8x apart and disagreeing groups are all
// trained on and reported, none dropped.
func TestFitKeepsEveryRow(t *testing.T) {
	rows := conflictRows()
	k := spec.OpKey{Op: spec.OpAttnPrefill, Measurement: spec.CUDAEvent, TP: 4}
	b, err := Fit(&TrainingSet{Model: "qwen3-30b-a3b", Measurement: spec.CUDAEvent, Ops: []OpRows{{Key: k, Rows: rows}}}, Options{Seed: 1, Trees: 8})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := b.Predictor(k)
	m := p.Meta()
	if m.TrainRows != len(rows) || len(m.Dropped) != 0 || m.AllRows.Rows != len(rows) {
		t.Errorf("trained on %d of %d rows, scored %d, dropped %v", m.TrainRows, len(rows), m.AllRows.Rows, m.Dropped)
	}
	if m.Repeats.Disagreeing != 32 || math.Abs(m.Repeats.DisagreeSpread-1.8) > 1e-9 {
		t.Errorf("disagreeing sweeps: %+v", m.Repeats)
	}
	if len(m.Groups) != 3 {
		t.Errorf("groups: %+v", m.Groups)
	}
	// --repeats median trains on one row per shape, and still scores
	// every row.
	b, err = Fit(&TrainingSet{Model: "qwen3-30b-a3b", Measurement: spec.CUDAEvent, Ops: []OpRows{{Key: k, Rows: rows}}}, Options{Seed: 1, Trees: 8, Repeats: bundle.RepeatsMedian})
	if err != nil {
		t.Fatal(err)
	}
	p, _ = b.Predictor(k)
	_, n := shapes(rows)
	if m := p.Meta(); m.TrainRows != n || m.AllRows.Rows != len(rows) || b.Meta().Repeats != bundle.RepeatsMedian {
		t.Errorf("median: trained on %d rows (%d shapes), scored %d of %d", m.TrainRows, n, m.AllRows.Rows, len(rows))
	}
}

const groupMixed = "mixed"
