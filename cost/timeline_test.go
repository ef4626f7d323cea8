package cost

import (
	"math"
	"math/rand/v2"
	"testing"
)

// bruteEnd simulates the two timelines op by op: the CPU issues op i at the
// end of its issue cost; the GPU starts it once issued and the previous op
// finished.
func bruteEnd(cpu, gpu []float64) float64 {
	var c, g float64
	for i := range cpu {
		c += cpu[i]
		g = max(g, c) + gpu[i]
	}
	return g
}

func spanOf(cpu, gpu []float64) span {
	var s span
	for i := range cpu {
		s = s.then(opSpan(cpu[i], gpu[i]))
	}
	return s
}

func TestSpanComposesLikeTheTimelines(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(30)
		cpu, gpu := make([]float64, n), make([]float64, n)
		for i := range cpu {
			cpu[i] = rng.ExpFloat64() * 10
			gpu[i] = rng.ExpFloat64() * 10 * float64(trial%3) // some host-bound, some GPU-bound
		}
		if got, want := spanOf(cpu, gpu).end, bruteEnd(cpu, gpu); math.Abs(got-want) > 1e-9*max(1, want) {
			t.Fatalf("trial %d: span end %g, op-by-op %g", trial, got, want)
		}
		// Repeating a layer equals issuing its ops layers times.
		layers := 1 + rng.IntN(8)
		var rc, rg []float64
		for l := 0; l < layers; l++ {
			rc, rg = append(rc, cpu...), append(rg, gpu...)
		}
		if got, want := spanOf(cpu, gpu).repeat(layers).end, bruteEnd(rc, rg); math.Abs(got-want) > 1e-9*max(1, want) {
			t.Fatalf("trial %d: %d layers end %g, op-by-op %g", trial, layers, got, want)
		}
	}
}

func TestLayerSpanBounded(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 200; trial++ {
		n := 2 + rng.IntN(25)
		cpu, gpu := make([]float64, n), make([]float64, n)
		var c, g float64
		for i := range cpu {
			cpu[i], gpu[i] = 5+rng.Float64()*10, rng.Float64()*20*float64(trial%4)
			c += cpu[i]
			g += gpu[i]
		}
		exact := bruteEnd(cpu, gpu)
		approx := layerSpan(c, g, cpu[0], n).end
		// Both lie in [max(c, g), c + g]: the error is below min(c, g),
		// paid once per step, not per layer.
		if math.Abs(exact-approx) > min(c, g)+1e-9 {
			t.Fatalf("trial %d: layer span %g, exact %g: off by more than min(cpu, gpu) = %g", trial, approx, exact, min(c, g))
		}
	}
}

func TestSpanRegimes(t *testing.T) {
	// Host-bound: 10 layers of 100 us CPU, 10 us GPU end after all issue
	// plus the last layer's GPU tail.
	l := layerSpan(100, 10, 10, 10)
	if got := l.repeat(10).end; math.Abs(got-(1000+1)) > 1e-9 {
		t.Errorf("host-bound: end %g, want 1001", got)
	}
	// GPU-bound: the first op's issue, then all GPU time.
	l = layerSpan(10, 100, 1, 10)
	if got := l.repeat(10).end; math.Abs(got-(1+1000)) > 1e-9 {
		t.Errorf("GPU-bound: end %g, want 1001", got)
	}
}
