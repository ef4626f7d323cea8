package cost

import (
	"math"
	"math/rand/v2"
	"testing"
)

// multinomialByBinomials is drawMultinomial as plain conditional
// binomials (pi/rem and binomial at every rank): the draw the router's
// precomputed conditionals and zero-count memo must reproduce.
func multinomialByBinomials(r *expertRouter, rng drawRNG, tokens int, counts []int32) {
	n := tokens * r.topK
	rem := float64(r.topK)
	for i, pi := range r.incl {
		if n == 0 {
			break
		}
		c := n
		if i < len(r.incl)-1 && rem > pi {
			c = binomial(rng.r, n, pi/rem)
		}
		c = min(c, tokens)
		counts[r.perm[i]] = int32(c)
		n -= c
		rem -= pi
	}
}

// TestMultinomialSameDrawsAsBinomials checks that the multinomial draw
// with precomputed conditionals and the memo of zero-count probabilities
// gives the same counts, and leaves the random stream at the same place,
// as conditional binomials computed afresh: routing tables, and so every
// MoE run's output, do not depend on the shortcut. Uniform, skewed (with
// the permutation) and a heavy-tailed replay-like histogram; token counts
// over the inversion, mixed and normal ranges of the binomial.
func TestMultinomialSameDrawsAsBinomials(t *testing.T) {
	heavy := make([]float64, 128)
	for i := range heavy {
		heavy[i] = math.Pow(float64(i+1), -1.5)
		if i%17 == 0 {
			heavy[i] = 0
		}
	}
	for _, tc := range []struct {
		name    string
		weights []float64
		permute bool
	}{
		{"uniform", nil, false},
		{"skewed", zipfWeights(128, 0.2), true},
		{"heavy", heavy, false},
	} {
		a, err := newRouter(128, 8, tc.weights, tc.permute)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := newRouter(128, 8, tc.weights, tc.permute)
		ra, rb := newDrawRNG(7, 1), newDrawRNG(7, 1)
		ca, cb := make([]int32, 128), make([]int32, 128)
		for _, tokens := range []int{65, 80, 100, 127, 128, 200, 511, 1000, 4096, 16384} {
			for d := range 40 {
				clear(ca)
				clear(cb)
				a.drawMultinomial(ra, tokens, ca)
				multinomialByBinomials(b, rb, tokens, cb)
				for e := range ca {
					if ca[e] != cb[e] {
						t.Fatalf("%s: %d tokens, draw %d: expert %d gets %d, conditional binomials %d", tc.name, tokens, d, e, ca[e], cb[e])
					}
				}
				if x, y := ra.pcg.Uint64(), rb.pcg.Uint64(); x != y {
					t.Fatalf("%s: %d tokens, draw %d: random streams diverge", tc.name, tokens, d)
				}
			}
		}
	}
}

// TestInvertBinomialMean checks the shared inversion walk against the
// binomial's mean over many draws (n = 40, p = 0.1: mean 4).
func TestInvertBinomialMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var sum int
	const draws = 200000
	for range draws {
		sum += binomial(rng, 40, 0.1)
	}
	if mean := float64(sum) / draws; math.Abs(mean-4) > 0.03 {
		t.Fatalf("mean of Binomial(40, 0.1) draws %.4f, want 4 +- 0.03", mean)
	}
}

// BenchmarkMultinomialDraw times one skewed multinomial routing draw of
// 100 tokens (128 experts, top-8: the binomial's inversion range), as the
// router makes it and as plain conditional binomials make it.
func BenchmarkMultinomialDraw(b *testing.B) {
	r, err := newRouter(128, 8, zipfWeights(128, 0.2), true)
	if err != nil {
		b.Fatal(err)
	}
	counts := make([]int32, 128)
	for _, v := range []struct {
		name string
		draw func(*expertRouter, drawRNG, int, []int32)
	}{{"router", (*expertRouter).drawMultinomial}, {"binomials", multinomialByBinomials}} {
		b.Run(v.name, func(b *testing.B) {
			rng := newDrawRNG(1, 2)
			for b.Loop() {
				v.draw(r, rng, 100, counts)
			}
		})
	}
}
