package simulate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// Histogram percentiles agree with spec.Percentile to HistogramErrorPct
// (0.195%) on skewed data;
// mean, count and max are exact.
func TestHistogramPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 10, 1000, 100000} {
		h := NewHistogram()
		v := make([]float64, n)
		var sum, mx float64
		for i := range v {
			v[i] = math.Exp(rng.NormFloat64()*1.5) * 8 // log-normal around 8 ms
			if i%97 == 0 {
				v[i] = 0
			}
			h.Add(v[i])
			sum += v[i]
			mx = math.Max(mx, v[i])
		}
		if h.Count() != uint64(n) || math.Abs(h.Mean()-sum/float64(n)) > 1e-9*sum || h.Max() != mx {
			t.Fatalf("n=%d: count %d, mean %g (want %g), max %g (want %g)", n, h.Count(), h.Mean(), sum/float64(n), h.Max(), mx)
		}
		for _, p := range []float64{0, 1, 50, 90, 95, 99, 99.9, 100} {
			want, got := spec.Percentile(v, p), h.Percentile(p)
			if math.Abs(got-want) > HistogramErrorPct/100*want+1e-12 {
				t.Errorf("n=%d P%g: %g, exact %g", n, p, got, want)
			}
		}
	}
	if h := NewHistogram(); !math.IsNaN(h.Percentile(50)) || !math.IsNaN(h.Mean()) {
		t.Error("an empty histogram should answer NaN")
	}
}
