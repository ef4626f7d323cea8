package simulate

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// A run keeps exact TTFT, TPOT and E2E percentiles up to exactValues
// requests and histogram ones above, within HistogramErrorPct of the exact
// percentiles of its own requests.arrow, with exact counts and means.
func TestLatencyPercentilesBoundedMemory(t *testing.T) {
	for _, n := range []int{2_000, exactValues + 10_000} {
		cfg := testConfig()
		cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:256x32", RatePerS: 60, NumRequests: n, Seed: 7}
		src, _, err := openSource(cfg.Workload)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		sum, err := Execute(mustResolve(t, cfg), src, Outputs{Dir: dir}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := runresult.ReadRequestMetrics(filepath.Join(dir, runresult.RequestsArrowFile))
		if err != nil {
			t.Fatal(err)
		}
		wantErr := 0.0
		if n > exactValues {
			wantErr = HistogramErrorPct
		}
		m := &sum.Metrics
		for _, c := range []struct {
			name string
			got  runresult.Stats
			col  func(*runresult.RequestMetrics) float64
		}{
			{"TTFT", m.TTFTMs, func(r *runresult.RequestMetrics) float64 { return r.TTFTMs }},
			{"TPOT", m.TPOTMs, func(r *runresult.RequestMetrics) float64 { return r.TPOTMs }},
			{"E2E", m.E2EMs, func(r *runresult.RequestMetrics) float64 { return r.E2EMs }},
		} {
			var v []float64
			for i := range rows {
				if x := c.col(&rows[i]); !math.IsNaN(x) {
					v = append(v, x)
				}
			}
			want := runresult.StatsOf(v)
			g := c.got
			if g.Count != n || want.Count != n || g.PercentileErrorPct != wantErr || math.Abs(g.Mean-want.Mean) > 1e-9*want.Mean {
				t.Fatalf("INV-12: n=%d %s: count %d (file %d), mean %g (file %g), error bound %g%%; want count %d, bound %g%%",
					n, c.name, g.Count, want.Count, g.Mean, want.Mean, g.PercentileErrorPct, n, wantErr)
			}
			for _, p := range [][2]float64{{g.P50, want.P50}, {g.P90, want.P90}, {g.P95, want.P95}, {g.P99, want.P99}} {
				if math.Abs(p[0]-p[1]) > wantErr/100*p[1]+1e-9 {
					t.Errorf("INV-12: n=%d %s: percentile %g, exact %g: beyond %g%%", n, c.name, p[0], p[1], wantErr)
				}
			}
			if n > exactValues && g.P99 == want.P99 && g.P50 == want.P50 {
				t.Errorf("INV-12: n=%d %s: histogram percentiles equal the exact ones to the bit: is the histogram in use?", n, c.name)
			}
		}
	}
}
