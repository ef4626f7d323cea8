package fit

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
)

func TestGridMatchesForest(t *testing.T) {
	for _, d := range []int{1, 2, 3} {
		card := []int{0, 200, 40, 12}[d]
		x, y := synthRowsCard(300, d, card, uint64(d))
		f, err := trainForest(x, y, bundle.ForestParams{Trees: 20, MaxDepth: 32, MinLeaf: 1, MaxFeatures: 1, Seed: 3}, 2)
		if err != nil {
			t.Fatal(err)
		}
		g := bundle.CompileGrid(f)
		if g == nil {
			t.Fatalf("d=%d: no grid", d)
		}
		probe, _ := synthRowsCard(2000, d, card+5, 99)
		probe = append(probe, x...)
		for _, q := range probe {
			a, b := f.Predict(q), g.Predict(q)
			if math.Abs(a-b) > 1e-9*math.Max(1, math.Abs(a)) {
				t.Fatalf("d=%d x=%v: forest %g, grid %g", d, q, a, b)
			}
		}
	}
}

func TestForestDeterministic(t *testing.T) {
	x, y := synthRows(400, 2, 5)
	p := bundle.ForestParams{Trees: 24, MaxDepth: 32, MinLeaf: 1, MaxFeatures: 0.5, Seed: 11}
	a, err := trainForest(x, y, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := trainForest(x, y, p, 4) // other worker count, same forest
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Nodes) != len(b.Nodes) {
		t.Fatalf("%d nodes with 1 worker, %d with 4", len(a.Nodes), len(b.Nodes))
	}
	for i := range a.Nodes {
		if a.Nodes[i] != b.Nodes[i] {
			t.Fatalf("node %d differs: %+v vs %+v", i, a.Nodes[i], b.Nodes[i])
		}
	}
	p.Seed = 12
	c, err := trainForest(x, y, p, 2)
	if err != nil {
		t.Fatal(err)
	}
	same := len(c.Nodes) == len(a.Nodes)
	for i := 0; same && i < len(a.Nodes); i++ {
		same = a.Nodes[i] == c.Nodes[i]
	}
	if same {
		t.Error("another seed grew the same forest")
	}
}

func TestForestLearnsAndRespectsLimits(t *testing.T) {
	// y = step function of x0 plus x1/100; x2 is noise.
	x, _ := synthRowsCard(600, 3, 200, 7)
	y := make([]float64, len(x))
	for i, r := range x {
		y[i] = r[1] / 100
		if r[0] > 100 {
			y[i] += 10
		}
	}
	tests := []struct {
		name string
		p    bundle.ForestParams
		tol  float64
	}{
		{"full", bundle.ForestParams{Trees: 30, MaxDepth: 32, MinLeaf: 1, MaxFeatures: 1, Seed: 1}, 0.2},
		{"stumps", bundle.ForestParams{Trees: 30, MaxDepth: 1, MinLeaf: 1, MaxFeatures: 1, Seed: 1}, 1.5},
		{"big leaves", bundle.ForestParams{Trees: 30, MaxDepth: 32, MinLeaf: 20, MaxFeatures: 1, Seed: 1}, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := trainForest(x, y, tc.p, 2)
			if err != nil {
				t.Fatal(err)
			}
			var mae float64
			for i, r := range x {
				mae += math.Abs(f.Predict(r) - y[i])
			}
			mae /= float64(len(x))
			if mae > tc.tol {
				t.Errorf("mean absolute error %.3f, want <= %g", mae, tc.tol)
			}
			for ti, root := range f.Roots {
				if depth := treeDepth(f, root); depth > tc.p.MaxDepth {
					t.Fatalf("tree %d depth %d > %d", ti, depth, tc.p.MaxDepth)
				}
			}
		})
	}
}

// treeDepth returns the depth of the subtree at i (a leaf is 0).
func treeDepth(f *bundle.Forest, i int32) int {
	n := f.Nodes[i]
	if n.Feat < 0 {
		return 0
	}
	return 1 + max(treeDepth(f, n.Left), treeDepth(f, n.Left+1))
}

func TestForestBadParams(t *testing.T) {
	x, y := synthRows(10, 1, 1)
	for _, p := range []bundle.ForestParams{
		{Trees: 0, MaxDepth: 3, MinLeaf: 1, MaxFeatures: 1},
		{Trees: 1, MaxDepth: 0, MinLeaf: 1, MaxFeatures: 1},
		{Trees: 1, MaxDepth: 3, MinLeaf: 0, MaxFeatures: 1},
		{Trees: 1, MaxDepth: 3, MinLeaf: 1, MaxFeatures: 0},
		{Trees: 1, MaxDepth: 3, MinLeaf: 1, MaxFeatures: 1.5},
	} {
		if _, err := trainForest(x, y, p, 1); err == nil {
			t.Errorf("%v: no error", p)
		}
	}
	if _, err := trainForest(nil, nil, bundle.ForestParams{Trees: 1, MaxDepth: 3, MinLeaf: 1, MaxFeatures: 1}, 1); err == nil {
		t.Error("no rows: no error")
	}
}

func TestBinEdges(t *testing.T) {
	tests := []struct {
		name  string
		col   []float64
		edges int
	}{
		{"constant", []float64{3, 3, 3}, 0},
		{"few values", []float64{1, 2, 2, 4}, 2},
		{"many values", func() []float64 {
			v := make([]float64, 5*maxBins)
			for i := range v {
				v[i] = float64(i % (2 * maxBins))
			}
			return v
		}(), maxBins - 1},
	}
	for _, tc := range tests {
		e := binEdges(tc.col)
		if len(e) != tc.edges {
			t.Errorf("%s: %d edges, want %d", tc.name, len(e), tc.edges)
		}
		for i := 1; i < len(e); i++ {
			if e[i] <= e[i-1] {
				t.Fatalf("%s: edges not increasing at %d: %v", tc.name, i, e[i-1:i+1])
			}
		}
	}
	if e := binEdges([]float64{1, 2, 2, 4}); e[0] != 1.5 || e[1] != 3 {
		t.Errorf("edges %v, want midpoints [1.5 3]", e)
	}
}
