package validate

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// TestRoundTripKnownDistortion simulates two workloads, exports their
// per-request metrics as measured CSVs with every TPOT distorted, and checks
// that the tables show exactly that distortion on the TPOT rows and 0%
// everywhere else.
func TestRoundTripKnownDistortion(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name       string
		tpotFactor float64 // measured TPOT = simulated TPOT x tpotFactor
		signedPct  float64 // (sim - meas) / meas
	}{
		// The simulator over-predicts TPOT by 20%.
		{"over", 1 / 1.2, 20},
		// Measured TPOT is 20% above the simulation: the error relative to
		// the measurement is 1/1.2 - 1.
		{"under", 1.2, (1/1.2 - 1) * 100},
	} {
		t.Run(c.name, func(t *testing.T) {
			sub := filepath.Join(dir, c.name)
			var measured []string
			for _, w := range []string{"short", "conv"} {
				sim := simulateTo(t, filepath.Join(sub, "sim"), "h100-tp1__"+w, testWorkload(w, 0.25), runresult.Calibration{})
				m := filepath.Join(sub, "h100-tp1__"+w+"__r1.csv")
				writeMeasuredCSV(t, sim, m, c.tpotFactor)
				measured = append(measured, m)
			}
			meas, err := ReadRuns(measured, Measured)
			if err != nil {
				t.Fatal(err)
			}
			sims, err := ReadRuns([]string{filepath.Join(sub, "sim")}, Simulated)
			if err != nil {
				t.Fatal(err)
			}
			metrics, err := Metrics("tpot_mean_ms", "tpot_p50_ms", "ttft_p99_ms", "e2e_mean_ms", "total_tok_s")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Compare(append(meas, sims...), metrics)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Rows) != 2*len(metrics) || len(rep.Unpaired) != 0 {
				t.Fatalf("%d rows, %d unpaired", len(rep.Rows), len(rep.Unpaired))
			}
			for _, r := range rep.Rows {
				want := 0.0
				if strings.HasPrefix(r.Metric, "tpot_") {
					want = c.signedPct
				}
				if !near(r.SignedPct, want) || !near(r.APEPct, abs(want)) {
					t.Errorf("%s/%s %s: signed %v%%, APE %v%%; want %v%%", r.Config, r.Workload, r.Metric, r.SignedPct, r.APEPct, want)
				}
			}
			for _, o := range rep.Overall {
				want := 0.0
				if strings.HasPrefix(o.Metric, "tpot_") {
					want = c.signedPct
				}
				if o.Rows != 2 || o.Pairs != 2 || !near(o.MeanSignedPct, want) || !near(o.MAPEPct, abs(want)) || !near(o.MaxAPEPct, abs(want)) {
					t.Errorf("overall %s: %+v, want signed %v%%", o.Metric, o, want)
				}
			}
		})
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}
