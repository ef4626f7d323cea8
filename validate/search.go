package validate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/ftk-dev/ftk/cost"
	"gonum.org/v1/gonum/optimize"
)

// predictorCache loads each bundle once.
type predictorCache struct {
	load  func(string) (cost.PredictorSet, error)
	sim   SimulateFunc
	preds map[string]cost.PredictorSet
}

func (c *predictorCache) get(r *Run) (cost.PredictorSet, error) {
	b := r.Sim.Bundle
	if b == "" {
		return nil, nil
	}
	if p, ok := c.preds[b]; ok {
		return p, nil
	}
	if c.load == nil {
		return nil, fmt.Errorf("calibrate: %s was simulated with the bundle %s, and this calibration cannot load bundles", r, b)
	}
	p, err := c.load(b)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %s: %w", r, err)
	}
	if c.preds == nil {
		c.preds = map[string]cost.PredictorSet{}
	}
	c.preds[b] = p
	return p, nil
}

// evalRows re-runs the distinct simulated runs of pairs with cal and
// tabulates them against their measured partners.
func evalRows(pairs []Pair, cal cost.Calibration, metrics []Metric, pc *predictorCache) ([]Row, int, error) {
	redone := map[*Run]*Run{}
	out := make([]Pair, len(pairs))
	for i, p := range pairs {
		s, ok := redone[p.Simulated]
		if !ok {
			preds, err := pc.get(p.Simulated)
			if err != nil {
				return nil, len(redone), err
			}
			if s, err = Resimulate(p.Simulated, cal, preds, pc.sim); err != nil {
				return nil, len(redone), err
			}
			if err := s.Check(); err != nil {
				return nil, len(redone), fmt.Errorf("calibrate: with %s: %w", formatCalibration(cal), err)
			}
			redone[p.Simulated] = s
		}
		out[i] = Pair{p.Measured, s}
	}
	rows, err := Tabulate(out, metrics)
	return rows, len(redone), err
}

// fitFold fits params on the pairs of the fit workloads. It first probes
// each correction and frees only those the runs identify (screen), then
// minimises the MAPE of the fit rows (plus the weak
// prior) by a seeded CMA-ES search followed by a Nelder-Mead polish, within
// opts.MaxEvaluations evaluations.
func fitFold(pairs []Pair, fit []string, params []param, opts CalibrateOptions, pc *predictorCache, tick func()) (Fold, error) {
	f := Fold{FitWorkloads: fit, HeldOutWorkloads: without(pairWorkloads(pairs), fit...)}
	fitPairs := filterPairs(pairs, fit)
	var start cost.Calibration
	startRows, n, err := evalRows(fitPairs, start, opts.Metrics, pc)
	f.Simulations += n
	f.Evaluations++
	tick()
	if err != nil {
		return f, err
	}
	f.StartMAPEPct = meanAPE(startRows)
	// Probe: free only the corrections these runs identify (screen).
	eval := func(c cost.Calibration) ([]Row, error) {
		rows, n, err := evalRows(fitPairs, c, opts.Metrics, pc)
		f.Simulations += n
		f.Evaluations++
		tick()
		return rows, err
	}
	var free []param
	if f.Params, free, err = screen(params, startRows, eval); err != nil {
		return f, err
	}
	if len(free) == 0 {
		return f, fmt.Errorf("calibrate: none of the corrections %v can be identified from the runs of %v (%s): add workloads that exercise them", paramNames(params), fit, whyNot(f.Params))
	}
	var fitErr error
	calOf := func(x []float64) cost.Calibration {
		c := cost.Calibration{}
		for i, p := range free {
			p.set(&c, p.fromX(x[i]))
		}
		return c
	}
	objective := func(x []float64) float64 {
		if fitErr != nil {
			return math.Inf(1)
		}
		rows, n, err := evalRows(fitPairs, calOf(x), opts.Metrics, pc)
		f.Simulations += n
		f.Evaluations++
		tick()
		if err != nil {
			fitErr = err
			return math.Inf(1)
		}
		return meanAPE(rows) + prior(free, x)
	}
	x := make([]float64, len(free))
	for i, p := range free {
		x[i] = p.toX(p.start)
	}
	best := f.StartMAPEPct
	// The simulated metrics are piecewise constant at small scales (requests
	// move between engine steps), so the objective is rugged: rounds of a
	// seeded CMA-ES search, each restarted from the best point so far and
	// followed by a Nelder-Mead polish, until a round stops improving or
	// the simulation budget is spent.
	for round := uint64(1); ; round++ {
		improved := false
		for _, method := range []optimize.Method{
			&optimize.CmaEsChol{InitStepSize: 0.5, Src: rand.NewPCG(1, round)},
			&optimize.NelderMead{SimplexSize: 0.05},
		} {
			evals := opts.MaxEvaluations - f.Evaluations
			if evals <= 2*(len(free)+1) {
				break
			}
			res, err := optimize.Minimize(optimize.Problem{Func: objective}, x, &optimize.Settings{
				FuncEvaluations: evals,
				Converger:       &optimize.FunctionConverge{Absolute: 1e-3, Iterations: 10 * len(free)},
			}, method)
			if fitErr != nil {
				return f, fitErr
			}
			if err != nil && res == nil {
				return f, fmt.Errorf("calibrate: %w", err)
			}
			if res.F < best-1e-3 {
				best, improved = res.F, true
				copy(x, res.X)
			}
		}
		if !improved {
			break
		}
	}
	f.Calibration = calOf(x)
	if best == f.StartMAPEPct {
		f.Calibration = start
	}
	f.FitMAPEPct = best
	for i := range f.Params {
		for j, p := range free {
			if p.name == f.Params[i].Name {
				f.Params[i].Value = p.fromX(x[j])
			}
		}
	}
	return f, nil
}

// whyNot lists why each correction was left out.
func whyNot(ps []FittedParam) string {
	var s []string
	for _, p := range ps {
		if !p.Fitted {
			s = append(s, p.Name+": "+p.Why)
		}
	}
	return strings.Join(s, "; ")
}

// PriorWeightPct is the weight, in percentage points of MAPE, of the weak
// prior that keeps the launch cost and the family scales near their start:
// PriorWeightPct x ln(value/start)^2 each. A scale of 1.25 costs 0.05
// points and one of 2 costs 0.48, little against the tens of percent a real
// mis-calibration shows, but a correction the runs barely constrain (the
// attention scale of a model whose steps are mostly GEMM time) stays near 1
// instead of drifting to absorb noise.
const PriorWeightPct = 1

func prior(free []param, x []float64) float64 {
	var p float64
	for i, f := range free {
		if f.name != ParamHostMsPerStep {
			d := x[i] - f.toX(f.start)
			p += PriorWeightPct * d * d
		}
	}
	return p
}

func meanAPE(rows []Row) float64 {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = r.APEPct
	}
	return mean(v)
}
