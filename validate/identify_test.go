package validate

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
)

// TestCalibrateFreesWhatRunsIdentify fits every correction, leaving one
// workload out, to small runs with injected corrections, and checks that
// the held-out error stays low and that the final fit lands near the truth:
// corrections the runs cannot pin down (the host speed and the issue scales
// when CUDA graphs hide the host issue cost) stay at 1 instead of trading
// off against the host scale, and the host speed is fitted where eager
// steps expose it. On eager runs the host scale (a few percent of a
// host-bound step) and the host speed both lengthen every step: the
// held-out error must stay under 4%, and the host speed, where eager runs
// alone pin it (a knife edge, see the case), come back within 12% (a
// fixed host time per step, the correction the host scale replaced,
// traded off against the host speed: 6.4 ms and x0.81 for 1.5 ms and x1.3,
// held out 5.6%), while the host scale is pinned only loosely there (VIF
// about 9-17 against the host speed: it lands between x3 and x12 as the
// device model moves); with CUDA-graph runs of the same host the host speed
// comes back and the held-out error stays under 3%.
func TestCalibrateFreesWhatRunsIdentify(t *testing.T) {
	hostBoth := runresult.Calibration{HostScale: 3, HostSpeed: 1.3}
	for _, c := range []struct {
		name  string
		mode  string
		truth runresult.Calibration
		// params are the corrections to fit (nil: all).
		params []string
		// maxHeldOutPct bounds the held-out MAPE over all metrics.
		maxHeldOutPct float64
		// evals bounds each fit's evaluations.
		evals int
		// fitted must be fitted; notFitted must not be; loose are not
		// checked against the truth (the runs pin them only weakly).
		fitted, notFitted, loose []string
	}{
		// The host scale is fitted but pinned loosely: its
		// leave-one-workload-out folds land at x1.54, x2.89 and x1.94 on
		// main c70c666 (final fit x2.89) and at x1.54, x3.69 and x1.94
		// once the embedding gather is priced as PyTorch 2.8 runs it
		// (final x2.17), each with a fit MAPE under 1%.
		{"graphs: host scale and GEMM scale", "", injected, nil, 3, 300,
			[]string{ParamHostScale, "family_scale.linear_op"}, []string{ParamHostSpeed, "issue_scale.aten", "issue_scale.custom", "issue_scale.attention"}, []string{ParamHostScale}},
		{"eager: host speed and GEMM scale", "eager", runresult.Calibration{HostSpeed: 1.3, FamilyScale: map[string]float64{"linear_op": 1.25}},
			without(CalibrationParams(), ParamHostScale), 3, 300,
			[]string{ParamHostSpeed, "family_scale.linear_op"}, []string{"issue_scale.aten", "issue_scale.custom"}, nil},
		// Eager runs alone pin the host speed only on a knife edge: its VIF
		// against the host scale was 23 when the Hopper GEMM ComputeEff
		// moved 0.770 -> 0.773, and is 17 (> 10: left at 1, the host scale
		// x11.9 absorbing it, held out still under 4%) since one-wave GEMMs
		// are bounded by their tile reads through the L2 (roofline/tilel2.go,
		// 2026-12-03). The host speed is checked on the graph and eager
		// runs of the same host (next case); here only the held-out error
		// and the issue scales are.
		{"eager: host scale and host speed", "eager", hostBoth, nil, 4, 1000,
			[]string{ParamHostScale}, []string{"issue_scale.aten", "issue_scale.custom"}, []string{ParamHostScale, ParamHostSpeed}},
		// The host speed comes back (x1.34 for x1.3); the host scale is
		// fitted but pinned loosely since Hopper attention is priced as
		// FlashAttention-3 (roofline/fa3.go): its leave-one-workload-out
		// folds land at x1.36, x4.78 and x0.49 (final x1.36; x0.90 with
		// 2,500 evaluations), each with a fit MAPE under 1%.
		{"graphs and eager: host scale and host speed", "cuda-graph,eager", hostBoth, nil, 3, 1000,
			[]string{ParamHostScale, ParamHostSpeed}, []string{"issue_scale.custom"}, []string{ParamHostScale}},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := injectedRuns(t, t.TempDir(), 0.15, c.mode, c.truth, "conv", "short", "long")
			rep, err := Calibrate(runs, CalibrateOptions{Simulate: simulate.Replay, Params: c.params, MaxEvaluations: c.evals})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + b.String())
			if held := rep.heldOutMAPE(); !(held < c.maxHeldOutPct) {
				t.Errorf("held-out MAPE %.2f%%, want under %v%%", held, c.maxHeldOutPct)
			}
			got := map[string]FittedParam{}
			for _, p := range rep.Final.Params {
				got[p.Name] = p
			}
			for _, n := range c.fitted {
				if !got[n].Fitted {
					t.Errorf("%s not fitted: %s", n, got[n].Why)
				}
			}
			for _, n := range c.notFitted {
				if got[n].Fitted {
					t.Errorf("%s fitted to %.3g (%s), want it left at 1", n, got[n].Value, got[n].Why)
				}
			}
			// Every factor within 12% of the truth (1 where nothing was
			// injected); the host scale, a few percent of a step whose P95
			// metrics jump by as much, within 25%.
			truth := c.truth
			for _, p := range rep.Final.Params {
				pp, err := parseParams([]string{p.Name})
				if err != nil {
					t.Fatal(err)
				}
				want := pp[0].get(&truth)
				if slices.Contains(c.loose, p.Name) {
					continue
				}
				tol := 1.12
				if p.Name == ParamHostScale {
					tol = 1.25
				}
				if math.Abs(math.Log(p.Value/want)) > math.Log(tol) {
					t.Errorf("%s x%.3g, injected x%.3g", p.Name, p.Value, want)
				}
			}
		})
	}
}
