package validate

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ftk-dev/ftk/simulate"
)

// BenchmarkCalibrateLeaveOneOut fits every correction to simulated
// "measurements" with injected corrections (calibrationRuns) on three
// workloads, leaving one workload out, reports the fit and held-out MAPE
// and prints the fitted corrections and the error tables.
func BenchmarkCalibrateLeaveOneOut(b *testing.B) {
	runs := calibrationRuns(b, b.TempDir(), 0.5, "conv", "short", "long")
	for b.Loop() {
		start := time.Now()
		rep, err := Calibrate(runs, CalibrateOptions{Simulate: simulate.Replay})
		if err != nil {
			b.Fatal(err)
		}
		sims := rep.Final.Simulations
		for _, f := range rep.Folds {
			sims += f.Simulations
		}
		b.ReportMetric(rep.heldOutMAPE(), "held-out-MAPE-%")
		b.ReportMetric(rep.fitMAPE(), "fit-MAPE-%")
		b.ReportMetric(float64(sims)/time.Since(start).Seconds(), "simulations/s")
		fmt.Printf("injected %s; fitted %s\n", formatCalibration(injected), formatCalibration(rep.Calibration()))
		if err := rep.WriteText(os.Stdout); err != nil {
			b.Fatal(err)
		}
	}
}
