package validate

import (
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/simulate"
)

// TestCalibrateFreesWhatRunsIdentify fits every correction, leaving one
// workload out, to small runs with injected corrections, and checks that
// the held-out error stays low and that the final fit lands near the truth:
// corrections the runs cannot pin down (the host speed and the issue scales
// when CUDA graphs hide the host issue cost) stay at 1 instead of trading
// off against the host time per step, and the host speed is fitted where
// eager steps expose it.
func TestCalibrateFreesWhatRunsIdentify(t *testing.T) {
	for _, c := range []struct {
		name  string
		mode  string
		truth cost.Calibration
		// params are the corrections to fit (nil: all).
		params []string
		// maxHeldOutPct bounds the held-out MAPE over all metrics.
		maxHeldOutPct float64
		// fitted must be fitted; notFitted must not be.
		fitted, notFitted []string
	}{
		{"graphs: host time and GEMM scale", "", injected, nil, 3,
			[]string{ParamHostMsPerStep, "family_scale.linear_op"}, []string{ParamHostSpeed, "issue_scale.aten", "issue_scale.custom", "issue_scale.attention"}},
		{"eager: host speed and GEMM scale", "eager", cost.Calibration{HostSpeed: 1.3, FamilyScale: map[string]float64{"linear_op": 1.25}},
			without(CalibrationParams(), ParamHostMsPerStep), 3,
			[]string{ParamHostSpeed, "family_scale.linear_op"}, []string{"issue_scale.aten", "issue_scale.custom"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			runs := injectedRuns(t, t.TempDir(), 0.15, c.mode, c.truth, "conv", "short", "long")
			rep, err := Calibrate(runs, CalibrateOptions{Simulate: simulate.Replay, Params: c.params, MaxEvaluations: 300})
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
			// injected); host time per step within 0.5 ms.
			truth := c.truth
			for _, p := range rep.Final.Params {
				pp, err := parseParams([]string{p.Name})
				if err != nil {
					t.Fatal(err)
				}
				want := pp[0].get(&truth)
				if p.Name == ParamHostMsPerStep {
					if want > 0 && math.Abs(p.Value-want) > 0.5 {
						t.Errorf("%s %.3g, injected %.3g", p.Name, p.Value, want)
					}
					continue
				}
				if math.Abs(math.Log(p.Value/want)) > math.Log(1.12) {
					t.Errorf("%s x%.3g, injected x%.3g", p.Name, p.Value, want)
				}
			}
		})
	}
}
