package validate

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
)

// injected are the corrections the "measurements" of the calibration tests
// are simulated with: a host scale (x3 the default host model: about 1 ms a
// step at the tests' batch sizes) and a scale of the linear-operator
// family (GEMMs, norms, activations).
var injected = runresult.Calibration{HostScale: 3, FamilyScale: map[string]float64{"linear_op": 1.25}}

// calibrationRuns simulates each workload twice: with the injected
// corrections, exported as a measured per-request CSV, and without, as an
// ftk simulate output directory; it reads both back as runs.
func calibrationRuns(t testing.TB, dir string, scale float64, workloads ...string) []*Run {
	t.Helper()
	return injectedRuns(t, dir, scale, "", injected, workloads...)
}

// injectedRuns is calibrationRuns with the execution mode (empty: the
// simulator's choice) and the injected truth given. Several modes (comma
// separated, none empty) give one configuration per mode, h100-tp1-MODE,
// each run on every workload.
func injectedRuns(t testing.TB, dir string, scale float64, mode string, truth runresult.Calibration, workloads ...string) []*Run {
	t.Helper()
	var runs []*Run
	modes := strings.Split(mode, ",")
	for _, mode := range modes {
		config := "h100-tp1"
		if len(modes) > 1 {
			config += "-" + mode
		}
		for _, w := range workloads {
			wc := testWorkload(w, scale)
			cfg := testConfig(t, wc, truth)
			cfg.Engine.ExecutionMode = mode
			truthDir := simulateConfigTo(t, filepath.Join(dir, "truth"), config+"__"+w, cfg)
			m := filepath.Join(dir, config+"__"+w+"__r1.csv")
			writeMeasuredCSV(t, truthDir, m, 1)
			mr, err := ReadRun(m, Measured)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Calibration = runresult.Calibration{}
			sr, err := ReadRun(simulateConfigTo(t, filepath.Join(dir, "sim"), config+"__"+w, cfg), Simulated)
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, mr, sr)
		}
	}
	return runs
}

// TestCalibrateRecoversInjectedCorrections fits the host scale and the
// linear-family scale on the conversation trace alone and checks the
// corrections and the error on the two held-out workloads.
func TestCalibrateRecoversInjectedCorrections(t *testing.T) {
	dir := t.TempDir()
	runs := calibrationRuns(t, dir, 1, "conv", "short", "long")
	rep, err := Calibrate(runs, CalibrateOptions{Simulate: simulate.Replay, FitWorkloads: []string{"conv"}, Params: []string{ParamHostScale, "linear_op"}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + b.String())
	cal := rep.Calibration()
	// The host scale and the linear scale trade off a little (both
	// lengthen every step; the host time is a few percent of one), so the
	// host scale is recovered to 25% and the linear scale to 4%; the
	// held-out error below is the check that matters.
	if math.Abs(math.Log(cal.HostScale/3)) > math.Log(1.25) || math.Abs(cal.FamilyScale["linear_op"]-1.25) > 0.05 || len(cal.FamilyScale) != 1 || cal.HostSpeed != 0 || cal.HostMsPerStep != 0 {
		t.Errorf("fitted %s, injected %s", formatCalibration(cal), formatCalibration(injected))
	}
	if held := rep.heldOutMAPE(); !(held < 2) {
		t.Errorf("held-out MAPE over all metrics %.2f%%, want under 2%%", held)
	}
	for _, o := range rep.Overall {
		if o.HeldOutRows != 2 || o.FitRows != 1 {
			t.Errorf("%s: %d held-out rows, %d fitted rows; want 2 and 1", o.Metric, o.HeldOutRows, o.FitRows)
		}
		// P95 TTFT is a chaotic statistic: with the injected corrections
		// off by 1% the simulator's own held-out P95 TTFT moves by up to 8%
		// (requests arriving just before or after a step boundary), and
		// host time and the linear scale trade off on one workload, so it
		// gets a wider bound; every other metric is under 2%.
		bound := 2.0
		if o.Metric == "ttft_p95_ms" {
			bound = 10
		}
		if !(o.HeldOutMAPEPct < bound) {
			t.Errorf("%s: held-out MAPE %.2f%% (before %.2f%%), want under %v%%", o.Metric, o.HeldOutMAPEPct, o.BeforeHeldOutMAPEPct, bound)
		}
		if strings.HasSuffix(o.Metric, "_ms") && !(o.BeforeHeldOutMAPEPct > 20) {
			t.Errorf("%s: held-out MAPE before calibration %.2f%%: the injected corrections should show", o.Metric, o.BeforeHeldOutMAPEPct)
		}
	}
	path := filepath.Join(dir, "calibration.yaml")
	if err := rep.WriteCalibrationFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := runresult.LoadCalibration(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.HostScale != cal.HostScale || back.FamilyScale["linear_op"] != cal.FamilyScale["linear_op"] || back.HostSpeed != 0 {
		t.Errorf("file reads back as %s, fitted %s", formatCalibration(back), formatCalibration(cal))
	}
	data, _ := os.ReadFile(path)
	for _, want := range []string{"# fitted on workloads: conv", "#   host_scale: fitted", "held-out MAPE"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("calibration file lacks %q:\n%s", want, data)
		}
	}
}

// TestCalibrateLeaveOneWorkloadOut checks the default split on small runs:
// one fit per held-out workload plus the final fit on all, an
// unidentifiable correction left out, and both error columns filled.
func TestCalibrateLeaveOneWorkloadOut(t *testing.T) {
	runs := calibrationRuns(t, t.TempDir(), 0.1, "conv", "short", "long")
	calls, last, lastTotal := 0, 0, 0
	progress := func(done, total int) {
		calls++
		if done < last || done > total || (lastTotal != 0 && total != lastTotal) {
			t.Errorf("progress %d/%d after %d/%d", done, total, last, lastTotal)
		}
		last, lastTotal = done, total
	}
	rep, err := Calibrate(runs, CalibrateOptions{Simulate: simulate.Replay, Params: []string{ParamHostScale, "linear_op", "issue_scale.triton"}, MaxEvaluations: 60, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	evals := rep.Final.Evaluations
	for _, f := range rep.Folds {
		evals += f.Evaluations
	}
	if calls != evals || lastTotal != 4*60 || last != min(evals, lastTotal) {
		t.Errorf("progress called %d times, last %d/%d; %d evaluations in 4 fits of at most 60", calls, last, lastTotal, evals)
	}
	if len(rep.Folds) != 3 || strings.Join(rep.Final.FitWorkloads, ",") != "conv,long,short" || len(rep.Final.HeldOutWorkloads) != 0 {
		t.Fatalf("%d folds, final fit on %v held out %v", len(rep.Folds), rep.Final.FitWorkloads, rep.Final.HeldOutWorkloads)
	}
	for i, w := range []string{"conv", "long", "short"} {
		f := rep.Folds[i]
		if strings.Join(f.HeldOutWorkloads, ",") != w || len(f.FitWorkloads) != 2 || !(f.FitMAPEPct < f.StartMAPEPct) {
			t.Errorf("fold %d: held out %v, fit on %v, MAPE %.2f%% from %.2f%%", i, f.HeldOutWorkloads, f.FitWorkloads, f.FitMAPEPct, f.StartMAPEPct)
		}
	}
	for _, p := range rep.Final.Params {
		// llama-3.1-8b issues no Triton kernel: its issue scale moves
		// nothing and must not be reported as fitted.
		if (p.Name == "issue_scale.triton") == p.Fitted {
			t.Errorf("%s fitted = %v", p.Name, p.Fitted)
		}
	}
	for _, r := range rep.Rows {
		if math.IsNaN(r.FitAPEPct) || math.IsNaN(r.HeldOutAPEPct) || math.IsNaN(r.BeforeAPEPct) {
			t.Errorf("row %s/%s %s lacks an error column: %+v", r.Config, r.Workload, r.Metric, r)
		}
	}
	var csvOut, text strings.Builder
	if err := rep.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(csvOut.String(), "config,workload,metric,paired_runs,measured_median,ape_before_pct,ape_fit_pct,ape_held_out_pct\n") ||
		!strings.Contains(text.String(), "Leave one workload out") || !strings.Contains(text.String(), "no effect on these runs") {
		t.Errorf("report layout:\n%s\n%s", text.String(), csvOut.String())
	}
}

func TestCalibrateRefuses(t *testing.T) {
	runs := calibrationRuns(t, t.TempDir(), 0.05, "short")
	for _, c := range []struct {
		opts CalibrateOptions
		want string
	}{
		{CalibrateOptions{Simulate: simulate.Replay}, "leaving one workload out needs two workloads or more"},
		{CalibrateOptions{Simulate: simulate.Replay, FitWorkloads: []string{"chat"}}, `fit workload "chat" has no paired runs`},
		{CalibrateOptions{Simulate: simulate.Replay, FitWorkloads: []string{"short"}, Params: []string{"gpu_speed"}}, `unknown correction "gpu_speed"`},
	} {
		if _, err := Calibrate(runs, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.opts, err, c.want)
		}
	}
	// Same inputs, same file, byte for byte (the search is seeded).
	var files [2][]byte
	for i := range files {
		rep, err := Calibrate(runs, CalibrateOptions{Simulate: simulate.Replay, FitWorkloads: []string{"short"}, MaxEvaluations: 60})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := rep.writeCalibrationYAML(&b); err != nil {
			t.Fatal(err)
		}
		files[i] = []byte(b.String())
	}
	if string(files[0]) != string(files[1]) {
		t.Errorf("two calibrations of the same runs differ:\n%s\n%s", files[0], files[1])
	}
	// A measured CSV stands in for the simulated side: it cannot be re-run.
	m := *runs[0]
	m.Side = Simulated
	if _, err := Calibrate([]*Run{runs[0], &m}, CalibrateOptions{Simulate: simulate.Replay, FitWorkloads: []string{"short"}}); err == nil || !strings.Contains(err.Error(), "is not an ftk simulate output directory") {
		t.Errorf("CSV as simulated side: %v", err)
	}
}
