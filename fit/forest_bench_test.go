package fit

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ftk-dev/ftk/bundle"
)

func synthRows(n, d int, seed uint64) ([][]float64, []float64) {
	return synthRowsCard(n, d, 4096, seed)
}

func synthRowsCard(n, d, card int, seed uint64) ([][]float64, []float64) {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([][]float64, n)
	y := make([]float64, n)
	for i := range x {
		x[i] = make([]float64, d)
		s := 0.0
		for j := range x[i] {
			x[i][j] = float64(r.IntN(card))
			s += math.Sqrt(x[i][j])
		}
		y[i] = s + r.NormFloat64()
	}
	return x, y
}

func BenchmarkTrainForest1D(b *testing.B) {
	x, y := synthRows(210, 1, 1)
	p := bundle.ForestParams{Trees: 100, MaxDepth: 30, MinLeaf: 1, MaxFeatures: 1, Seed: 1}
	for b.Loop() {
		if _, err := trainForest(x, y, p, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTrainForest2D(b *testing.B) {
	x, y := synthRows(430, 2, 1)
	p := bundle.ForestParams{Trees: 100, MaxDepth: 30, MinLeaf: 1, MaxFeatures: 1, Seed: 1}
	for b.Loop() {
		if _, err := trainForest(x, y, p, 1); err != nil {
			b.Fatal(err)
		}
	}
}
