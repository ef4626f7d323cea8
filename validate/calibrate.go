package validate

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// CalibrateOptions say what to fit and how to split the runs.
type CalibrateOptions struct {
	// Metrics are the metrics whose MAPE the fit minimises and the report
	// shows (nil: the defaults).
	Metrics []Metric
	// FitWorkloads are the workloads to fit on; the others are held out.
	// Empty: leave one workload out (one fit per workload, holding it out,
	// and a final fit on all).
	FitWorkloads []string
	// Params names the corrections to fit (see CalibrationParams; nil: all
	// of them). A correction that does not move the metrics of the fitted
	// runs is left out of the fit and reported as such.
	Params []string
	// MaxEvaluations bounds the evaluations of the objective in one fit
	// (0: 1000); each simulates every run of the fit set once.
	MaxEvaluations int
	// Progress, when set, is called after every evaluation of the objective
	// with the evaluations done and their most (the fits times
	// MaxEvaluations; a fit that converges early skips the rest).
	Progress func(done, total int)
	// LoadPredictors loads the operator predictors of a simulation's
	// --bundle (a fit bundle or kernel tables, cfg.Bundle), for
	// simulations that used one (nil: such simulations are refused).
	LoadPredictors func(cfg runresult.Config) (cost.PredictorSet, error)
	// Simulate re-runs a simulation (simulate.Replay); calibration needs
	// it.
	Simulate SimulateFunc
}

// FittedParam is one correction of a fit.
type FittedParam struct {
	Name  string
	Start float64
	Value float64
	// Fitted is false when the fitted runs do not identify the correction
	// (it does not move their metrics, moves them unevenly, or as freed
	// corrections do; see screen): it stays at its start and out of the
	// calibration file.
	Fitted bool
	// Why says what the probe found: the response that identified it, or
	// why it was not fitted.
	Why string
}

// Fold is one fit: the workloads fitted, those held out and the result.
type Fold struct {
	FitWorkloads     []string
	HeldOutWorkloads []string
	Calibration      runresult.Calibration
	Params           []FittedParam
	// StartMAPEPct and FitMAPEPct are the MAPE over the fitted rows (all
	// metrics) at the start values and after fitting.
	StartMAPEPct float64
	FitMAPEPct   float64
	// Evaluations of the objective and the simulations they ran.
	Evaluations int
	Simulations int
}

// CalibRow is one configuration, workload and metric of a calibration
// report. An error is NaN where it does not apply.
type CalibRow struct {
	Config, Workload, Metric string
	Pairs                    int
	MeasuredMedian           float64
	// BeforeAPEPct is the error of the simulations as given.
	BeforeAPEPct float64
	// FitAPEPct is the error with the final calibration, for a workload it
	// was fitted on.
	FitAPEPct float64
	// HeldOutAPEPct is the error with a calibration fitted without this
	// workload.
	HeldOutAPEPct float64
}

// CalibOverall is the MAPE of one metric before calibration, on fitted rows
// and on held-out rows.
type CalibOverall struct {
	Metric               string
	Rows                 int
	BeforeMAPEPct        float64
	FitRows              int
	FitMAPEPct           float64
	HeldOutRows          int
	HeldOutMAPEPct       float64
	BeforeFitMAPEPct     float64 // before calibration, on the fitted rows
	BeforeHeldOutMAPEPct float64 // before calibration, on the held-out rows
}

// CalibrationReport is the outcome of Calibrate.
type CalibrationReport struct {
	// Final is the fit whose calibration is the result: on FitWorkloads, or
	// on every workload when leaving one out.
	Final Fold
	// Folds are the leave-one-workload-out fits (empty with FitWorkloads).
	Folds    []Fold
	Metrics  []Metric
	Rows     []CalibRow
	Overall  []CalibOverall
	Unpaired []Unpaired
}

// Calibration returns the fitted calibration.
func (r *CalibrationReport) Calibration() runresult.Calibration { return r.Final.Calibration }

// Calibrate fits global corrections (host time per step, per-launch cost,
// a device-time scale per operator family) so that re-running the
// simulations of runs matches their measured partners, minimising the MAPE
// of the chosen metrics (see fitFold). Simulated runs must be ftk simulate
// outputs (Run.Sim); the fit starts from no correction, whatever
// calibration they were simulated with, while the "before" column shows
// them as they are. The report gives, per row, the error before, on the
// fitted runs and on held-out runs in separate columns.
func Calibrate(runs []*Run, opts CalibrateOptions) (*CalibrationReport, error) {
	if opts.Metrics == nil {
		var err error
		if opts.Metrics, err = Metrics(); err != nil {
			return nil, err
		}
	}
	if opts.MaxEvaluations == 0 {
		opts.MaxEvaluations = 1000
	}
	for _, r := range runs {
		if err := r.Check(); err != nil {
			return nil, err
		}
	}
	pairs, unpaired, err := PairRuns(runs)
	if err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("calibrate: no measured run has a simulated partner (%d runs, all unpaired)", len(runs))
	}
	for _, p := range pairs {
		if p.Simulated.Sim == nil {
			return nil, fmt.Errorf("calibrate: %s is not an ftk simulate output directory: calibration needs to run it again", p.Simulated)
		}
		if _, err := spec.LookupDevice(p.Simulated.Sim.Device); err != nil {
			return nil, fmt.Errorf("calibrate: %s: %w", p.Simulated, err)
		}
	}
	params, err := parseParams(opts.Params)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	workloads := pairWorkloads(pairs)
	pc := &predictorCache{load: opts.LoadPredictors, sim: opts.Simulate}
	rep := &CalibrationReport{Metrics: opts.Metrics, Unpaired: unpaired}
	heldOutCal := map[string]runresult.Calibration{}
	fits := 1
	if len(opts.FitWorkloads) == 0 {
		fits = len(workloads) + 1
	}
	done, total := 0, fits*opts.MaxEvaluations
	tick := func() {
		if done < total {
			done++
		}
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	if len(opts.FitWorkloads) > 0 {
		for _, w := range opts.FitWorkloads {
			if !slices.Contains(workloads, w) {
				return nil, fmt.Errorf("calibrate: fit workload %q has no paired runs (workloads: %v)", w, workloads)
			}
		}
		fit := sortedUnique(opts.FitWorkloads)
		if rep.Final, err = fitFold(pairs, fit, params, opts, pc, tick); err != nil {
			return nil, err
		}
		for _, w := range rep.Final.HeldOutWorkloads {
			heldOutCal[w] = rep.Final.Calibration
		}
	} else {
		if len(workloads) < 2 {
			return nil, fmt.Errorf("calibrate: leaving one workload out needs two workloads or more, the runs have %v: name the fit workloads to fit without a held-out set", workloads)
		}
		for _, w := range workloads {
			f, err := fitFold(pairs, without(workloads, w), params, opts, pc, tick)
			if err != nil {
				return nil, err
			}
			rep.Folds = append(rep.Folds, f)
			heldOutCal[w] = f.Calibration
		}
		var seeds []runresult.Calibration
		for _, f := range rep.Folds {
			seeds = append(seeds, f.Calibration)
		}
		if rep.Final, err = fitFold(pairs, workloads, params, opts, pc, tick, seeds...); err != nil {
			return nil, err
		}
	}
	if err := rep.tabulate(pairs, heldOutCal, pc); err != nil {
		return nil, err
	}
	return rep, nil
}

// tabulate fills the rows and the overall table.
func (rep *CalibrationReport) tabulate(pairs []Pair, heldOutCal map[string]runresult.Calibration, pc *predictorCache) error {
	before, err := Tabulate(pairs, rep.Metrics)
	if err != nil {
		return err
	}
	fitRows, _, err := evalRows(filterPairs(pairs, rep.Final.FitWorkloads), rep.Final.Calibration, rep.Metrics, pc)
	if err != nil {
		return err
	}
	key := func(c, w, m string) string { return c + "\x00" + w + "\x00" + m }
	fitAPE := map[string]float64{}
	for _, r := range fitRows {
		fitAPE[key(r.Config, r.Workload, r.Metric)] = r.APEPct
	}
	heldAPE := map[string]float64{}
	for w, cal := range heldOutCal {
		rows, _, err := evalRows(filterPairs(pairs, []string{w}), cal, rep.Metrics, pc)
		if err != nil {
			return err
		}
		for _, r := range rows {
			heldAPE[key(r.Config, r.Workload, r.Metric)] = r.APEPct
		}
	}
	lookup := func(m map[string]float64, k string) float64 {
		if v, ok := m[k]; ok {
			return v
		}
		return math.NaN()
	}
	for _, b := range before {
		k := key(b.Config, b.Workload, b.Metric)
		rep.Rows = append(rep.Rows, CalibRow{Config: b.Config, Workload: b.Workload, Metric: b.Metric, Pairs: b.Pairs,
			MeasuredMedian: b.MeasuredMedian, BeforeAPEPct: b.APEPct, FitAPEPct: lookup(fitAPE, k), HeldOutAPEPct: lookup(heldAPE, k)})
	}
	for _, m := range rep.Metrics {
		o := CalibOverall{Metric: m.Name}
		var all, fit, held, beforeFit, beforeHeld []float64
		for _, r := range rep.Rows {
			if r.Metric != m.Name {
				continue
			}
			all = append(all, r.BeforeAPEPct)
			if !math.IsNaN(r.FitAPEPct) {
				fit = append(fit, r.FitAPEPct)
				beforeFit = append(beforeFit, r.BeforeAPEPct)
			}
			if !math.IsNaN(r.HeldOutAPEPct) {
				held = append(held, r.HeldOutAPEPct)
				beforeHeld = append(beforeHeld, r.BeforeAPEPct)
			}
		}
		o.Rows, o.FitRows, o.HeldOutRows = len(all), len(fit), len(held)
		o.BeforeMAPEPct, o.FitMAPEPct, o.HeldOutMAPEPct = mean(all), mean(fit), mean(held)
		o.BeforeFitMAPEPct, o.BeforeHeldOutMAPEPct = mean(beforeFit), mean(beforeHeld)
		rep.Overall = append(rep.Overall, o)
	}
	return nil
}

func filterPairs(pairs []Pair, workloads []string) []Pair {
	var out []Pair
	for _, p := range pairs {
		if slices.Contains(workloads, p.Measured.ID.Workload) {
			out = append(out, p)
		}
	}
	return out
}

func pairWorkloads(pairs []Pair) []string {
	var w []string
	for _, p := range pairs {
		w = append(w, p.Measured.ID.Workload)
	}
	return sortedUnique(w)
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

func without(all []string, drop ...string) []string {
	var out []string
	for _, s := range all {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

func paramNames(ps []param) []string {
	var n []string
	for _, p := range ps {
		n = append(n, p.name)
	}
	return n
}

func cloneCalibration(c runresult.Calibration) runresult.Calibration {
	out := c
	out.FamilyScale = maps.Clone(c.FamilyScale)
	out.IssueScale = maps.Clone(c.IssueScale)
	return out
}
