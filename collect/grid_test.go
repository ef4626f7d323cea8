package collect

import (
	"slices"
	"testing"
)

func TestTokenGrid(t *testing.T) {
	for _, tc := range []struct {
		lo, hi  int
		want    []int // must all be present
		absent  []int
		maxStep int // largest gap allowed above 1024, as a ratio x 1000
	}{
		{1, 8192, []int{1, 2, 4, 8, 16, 32, 1008, 1024, 8192}, []int{3, 24, 1025}, 1120},
		{1, 100, []int{1, 2, 4, 8, 16, 96, 100}, []int{112}, 0},
		{5, 40, []int{5, 8, 16, 32, 40}, []int{4, 48}, 0},
		{1, 1, []int{1}, nil, 0},
	} {
		g := TokenGrid(tc.lo, tc.hi)
		if !slices.IsSorted(g) || g[0] != tc.lo || g[len(g)-1] != tc.hi {
			t.Errorf("TokenGrid(%d, %d) = %v: want sorted from %d to %d", tc.lo, tc.hi, g, tc.lo, tc.hi)
		}
		for _, v := range tc.want {
			if !slices.Contains(g, v) {
				t.Errorf("TokenGrid(%d, %d) lacks %d: %v", tc.lo, tc.hi, v, g)
			}
		}
		for _, v := range tc.absent {
			if slices.Contains(g, v) {
				t.Errorf("TokenGrid(%d, %d) has %d", tc.lo, tc.hi, v)
			}
		}
		for i := 1; i < len(g); i++ {
			if g[i-1] >= 1024 && tc.maxStep > 0 && g[i]*1000 > g[i-1]*tc.maxStep {
				t.Errorf("TokenGrid(%d, %d): step %d -> %d wider than %d/1000", tc.lo, tc.hi, g[i-1], g[i], tc.maxStep)
			}
			if g[i] <= 1024 && g[i-1] >= 16 && g[i]-g[i-1] > 16 {
				t.Errorf("TokenGrid(%d, %d): gap %d -> %d in the dense region", tc.lo, tc.hi, g[i-1], g[i])
			}
		}
	}
}

func TestLogGrid(t *testing.T) {
	g := LogGrid(0, 4095, 4)
	if g[0] != 0 || g[1] != 1 || g[len(g)-1] != 4095 {
		t.Fatalf("LogGrid(0, 4095, 4) = %v: want 0, 1, ..., 4095", g)
	}
	for i := 2; i < len(g); i++ {
		if ratio := float64(g[i]) / float64(g[i-1]); g[i-1] >= 4 && ratio > 1.5 || g[i-1] < 4 && g[i]-g[i-1] > 1 {
			t.Errorf("LogGrid step %d -> %d (ratio %.2f) too wide for 4 per octave", g[i-1], g[i], ratio)
		}
	}
	if got := LogGrid(3, 2, 4); got != nil {
		t.Errorf("LogGrid on an empty range = %v", got)
	}
}
