package fit

import (
	"math"
	"testing"
)

// TestGroupedFolds: the repeats of a shape share a fold (issue 13 item 3:
// a copied file or doubled rows never sit on both sides of a split), folds
// are balanced by shape, and a key with fewer shapes than folds gets one
// shape per fold.
func TestGroupedFolds(t *testing.T) {
	var rows []Row
	for s := 0; s < 23; s++ {
		for rep := 0; rep <= s%4; rep++ { // 1 to 4 measurements per shape
			rows = append(rows, Row{X: []float64{float64(s), 1}, TimeMs: 1 + float64(rep)})
		}
	}
	for _, k := range []int{2, 5, 30} {
		folds := groupedFolds(rows, k, 7)
		id, n := shapes(rows)
		foldOf := map[int]int{}
		perFold := map[int]map[int]bool{}
		for i, s := range id {
			if f, ok := foldOf[s]; ok && f != folds[i] {
				t.Fatalf("k=%d: shape %d in folds %d and %d", k, s, f, folds[i])
			}
			foldOf[s] = folds[i]
			if perFold[folds[i]] == nil {
				perFold[folds[i]] = map[int]bool{}
			}
			perFold[folds[i]][s] = true
		}
		lo, hi := n, 0
		for _, shapesIn := range perFold {
			lo, hi = min(lo, len(shapesIn)), max(hi, len(shapesIn))
		}
		if want := min(k, n); len(perFold) != want || hi-lo > 1 {
			t.Errorf("k=%d: %d folds holding %d to %d shapes, want %d balanced folds", k, len(perFold), lo, hi, want)
		}
	}
}

// TestRepeatStats: the noise floor is the error of answering each shape's
// median; median rows collapse a shape's repeats.
func TestRepeatStats(t *testing.T) {
	rows := []Row{
		{X: []float64{1}, TimeMs: 1}, {X: []float64{1}, TimeMs: 1.4}, // two sweeps 40% apart
		{X: []float64{2}, TimeMs: 2},
		{X: []float64{3}, TimeMs: 3}, {X: []float64{3}, TimeMs: 3}, {X: []float64{3}, TimeMs: 3}, {X: []float64{3}, TimeMs: 3},
	}
	st := repeatStats(rows)
	// Shape 1's median is 1.2: |1-1.2|/1 + |1.4-1.2|/1.4 over 7 rows.
	want := 100 * (0.2 + 0.2/1.4) / 7
	if st.Shapes != 3 || st.Repeated != 2 || st.Rows != 6 || math.Abs(st.NoiseFloorPct-want) > 1e-9 ||
		st.Disagreeing != 1 || math.Abs(st.DisagreeSpread-1.4) > 1e-9 {
		t.Errorf("repeat stats %+v, want noise floor %.4f%%", st, want)
	}
	if m := medianRows(rows); len(m) != 3 || m[0].TimeMs != 1.2 {
		t.Errorf("median rows %+v", m)
	}
}
