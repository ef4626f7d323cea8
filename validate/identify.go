package validate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/runresult"
)

// Identifiability screening: before a fit, every correction is probed from
// the start calibration and only those the fitted runs can pin down are
// freed; the others keep their start value and the report says why.
//
// A scale or the host speed is probed at x1.5 and /1.5. In log space a
// correction that acts on the metrics as a power law moves them by equal and
// opposite amounts (its slope), whereas a host cost hidden behind the GPU
// timeline until it is raised (a kink: only x1.5 moves anything) or one that
// only reshuffles requests between engine steps (P95 TTFT jumping either
// way) gives an even part as large as its slope. Such a correction is fitted
// to a kink or to noise: on two H100 workloads the fit pushed the host speed
// to x2.7 where the fitted runs did not notice and the held-out one, a
// short-prompt workload whose steps are host-bound at that speed, came out
// 124% off in P95 TTFT (BenchmarkCalibrateLeaveOneOut, before this screen).
//
// Corrections with a regular response are then freed in order of
// coarseness (host time per step, the operator-family scales, the host
// speed, the per-kind issue scales), each only when its slope across the
// fitted rows is not mostly a combination of the slopes already freed: its
// variance inflation factor, |slope|^2 / |part of it outside the span of the
// freed slopes|^2, is at most MaxVIF. A per-kind issue scale is thus fitted
// only where the runs tell it apart from the host speed.
const (
	// MinSlopeRatio is the least ratio of a probed correction's slope to
	// the even part of its response (norms over the fitted rows less the
	// most uneven one, minTrimRows, in log space) for it to be fitted. A power-law response gives infinity,
	// the queueing of a GEMM scale on these benchmarks about 3.5 to 4, a
	// kink or step noise about 1; 2 sits between (a guess, checked on
	// BenchmarkCalibrateLeaveOneOut and TestCalibrateFreesWhatRunsIdentify).
	MinSlopeRatio = 2
	// MaxVIF is the largest variance inflation factor of a freed
	// correction's slope against those freed before it. 10 is the usual
	// threshold for serious collinearity (Kutner, Nachtsheim, Neter and Li,
	// Applied Linear Statistical Models, 5th ed., 2005, section 10.5).
	MaxVIF = 10
	// MinOwnSlopePct is the least part of a freed correction's slope, in
	// percent (root sum of squares over the fitted rows of the ln change
	// for x1.5, or 1 ms), that the corrections freed before it do not
	// explain. P95 latencies of a run jump by several percent when a
	// correction moves by 1% (requests landing in another engine step: up
	// to 8% for P95 TTFT in TestCalibrateRecoversInjectedCorrections), so a
	// correction whose own effect for a 50% change is under about 10% is
	// fitted to those jumps (a guess on that figure, checked on
	// BenchmarkCalibrateLeaveOneOut and TestCalibrateFreesWhatRunsIdentify).
	MinOwnSlopePct = 10
	// probeFactor is the ratio at which scales are probed, both ways.
	probeFactor = 1.5
	// minTrimRows is the fewest fitted rows whose probe leaves its most
	// uneven row out of the slope's and the uneven part's norms. A P95
	// latency of a run of a few dozen requests is an order statistic of
	// two or three of them, and jumps by up to 35% when a correction moves
	// the engine steps they land in (TestCalibrateFreesWhatRunsIdentify's
	// runs: 22 and 60 requests; eager, P95 TTFT +22% at host scale x4 and
	// +14% at x7 where every other metric moved linearly; under CUDA
	// graphs, +34% at host speed x1.5, when its tokens' P95 metrics moved
	// 6-8%). Such a row alone decided whether a correction was fitted,
	// either way. A kink, a host cost hidden until raised, moves every
	// latency metric of the workload it hides in, and a slope moves
	// every row, so neither rests on one row; with fewer rows than this
	// the one row is too large a part of the evidence to drop.
	minTrimRows = 6
)

// probe is a correction's measured response on the fitted rows.
type probe struct {
	p param
	// slope is, per row, half the ln change of the simulated median
	// between the probe values (probeValues; for the host scale, half the
	// change from the start to the far probe).
	slope []float64
	// slopeNorm and evenNorm are the norms of the slope and of the uneven
	// part (half the sum of the two ln changes from the start; for the host
	// scale, half the far change less twice the near one).
	slopeNorm, evenNorm float64
	// regularSlope and regularEven are those norms without the most
	// uneven row where there are minTrimRows rows: what MinSlopeRatio
	// compares.
	regularSlope, regularEven float64
	moved                     bool
}

// coarseness orders the corrections for freeing.
func (p param) coarseness() int {
	switch {
	case p.name == ParamHostScale:
		return 0
	case p.family != "":
		return 1
	case p.name == ParamHostSpeed:
		return 2
	}
	return 3
}

// probeParam evaluates p either side of its start and
// measures its response against the start rows.
func probeParam(p param, startRows []Row, eval func(runresult.Calibration) ([]Row, error)) (probe, error) {
	pr := probe{p: p, slope: make([]float64, len(startRows))}
	values := p.probeValues()
	var ln [2][]float64
	for j, v := range values {
		c := runresult.Calibration{}
		p.set(&c, v)
		rows, err := eval(c)
		if err != nil {
			return pr, err
		}
		ln[j] = make([]float64, len(rows))
		for i := range rows {
			a, b := startRows[i].SimulatedMedian, rows[i].SimulatedMedian
			pr.moved = pr.moved || math.Abs(b-a) > 1e-9*math.Abs(a)
			if a > 0 && b > 0 {
				ln[j][i] = math.Log(b / a)
			}
		}
	}
	var s2, e2, worstE2, worstS2 float64
	for i := range pr.slope {
		var e float64
		if p.name == ParamHostScale {
			// Two steps up: the slope is the mean ln change a step, the
			// uneven part half its departure from linear.
			pr.slope[i], e = ln[0][i]/2, (ln[0][i]-2*ln[1][i])/2
		} else {
			pr.slope[i], e = (ln[0][i]-ln[1][i])/2, (ln[0][i]+ln[1][i])/2
		}
		e2 += e * e
		s2 += pr.slope[i] * pr.slope[i]
		if e*e > worstE2 {
			worstE2, worstS2 = e*e, pr.slope[i]*pr.slope[i]
		}
	}
	pr.slopeNorm, pr.evenNorm = math.Sqrt(s2), math.Sqrt(e2)
	pr.regularSlope, pr.regularEven = pr.slopeNorm, pr.evenNorm
	if len(pr.slope) >= minTrimRows {
		// One row's jump is neither a kink nor a slope (minTrimRows).
		pr.regularSlope, pr.regularEven = math.Sqrt(math.Max(s2-worstS2, 0)), math.Sqrt(math.Max(e2-worstE2, 0))
	}
	return pr, nil
}

// screen probes params from the start calibration (whose rows are
// startRows) and decides which to free. It returns every correction's
// entry, in the order of params, and the freed ones, in order of
// coarseness.
//
// It also returns, per freed correction, its slope per unit of the
// optimiser's coordinate (toX), the columns of the local Jacobian of the
// ln metrics that the search uses to precondition (searchBasis).
func screen(params []param, startRows []Row, eval func(runresult.Calibration) ([]Row, error)) ([]FittedParam, []param, [][]float64, error) {
	probes := make([]probe, len(params))
	for i, p := range params {
		var err error
		if probes[i], err = probeParam(p, startRows, eval); err != nil {
			return nil, nil, nil, err
		}
	}
	out := make([]FittedParam, len(params))
	for i, p := range params {
		out[i] = FittedParam{Name: p.name, Start: p.start, Value: p.start}
	}
	order := make([]int, len(params))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return params[a].coarseness() - params[b].coarseness() })
	var basis [][]float64 // orthonormal basis of the freed slopes
	var freedIdx []int
	var free []param
	var jac [][]float64
	for _, i := range order {
		pr, fp := probes[i], &out[i]
		switch {
		case !pr.moved:
			fp.Why = "no effect on these runs"
			continue
		case pr.regularSlope < MinSlopeRatio*pr.regularEven:
			fp.Why = fmt.Sprintf("not identifiable: %s move the metrics unevenly (slope %.1f%%, uneven part %.1f%%, its most uneven metric left out; a host cost hidden until raised, or step noise)",
				pr.p.probeText(), 100*pr.regularSlope, 100*pr.regularEven)
			continue
		}
		resid := slices.Clone(pr.slope)
		for _, q := range basis {
			d := dot(q, pr.slope)
			for k := range resid {
				resid[k] -= d * q[k]
			}
		}
		rn := math.Sqrt(dot(resid, resid))
		vif := math.Inf(1)
		if rn > 0 {
			vif = pr.slopeNorm * pr.slopeNorm / (rn * rn)
		}
		if vif > MaxVIF {
			names := closest(pr.slope, probes, freedIdx)
			verb := "does"
			if strings.Contains(names, " and ") {
				verb = "do"
			}
			fp.Why = fmt.Sprintf("not identifiable: moves the metrics as %s %s (VIF %.0f > %d)", names, verb, vif, MaxVIF)
			continue
		}
		if 100*rn < MinOwnSlopePct {
			what := "slope"
			if len(basis) > 0 {
				what = "slope beyond " + closest(pr.slope, probes, freedIdx) + "'s"
			}
			fp.Why = fmt.Sprintf("not identifiable: its own %s %.1f%% is under %d%%, within the step noise of P95 metrics", what, 100*rn, MinOwnSlopePct)
			continue
		}
		for k := range resid {
			resid[k] /= rn
		}
		basis = append(basis, resid)
		freedIdx = append(freedIdx, i)
		free = append(free, pr.p)
		col := make([]float64, len(pr.slope))
		for k, v := range pr.slope {
			col[k] = v / pr.p.probeDx()
		}
		jac = append(jac, col)
		fp.Fitted = true
		fp.Why = fmt.Sprintf("identified: slope %.1f%%, uneven part %.1f%% (%s), own %.1f%% (VIF %.1f)", 100*pr.slopeNorm, 100*pr.evenNorm, pr.p.probeText(), 100*rn, vif)
	}
	return out, free, jac, nil
}

// probeDx is the distance in the optimiser's coordinate (toX) over which
// a probe's slope is measured.
func (p param) probeDx() float64 {
	if p.name == ParamHostScale {
		return math.Log(1+2*hostProbe) / 2
	}
	return math.Log(probeFactor)
}

// probeText names p's probe values.
func (p param) probeText() string {
	v := p.probeValues()
	if p.name == ParamHostScale {
		return fmt.Sprintf("x%g and x%g", v[1], v[0])
	}
	return fmt.Sprintf("x%g and /%g", probeFactor, probeFactor)
}

// closest names the freed corrections whose slopes are most aligned with
// v (|cosine| of 0.5 or more, else the most aligned one).
func closest(v []float64, probes []probe, freed []int) string {
	var names []string
	best, bestName := -1.0, ""
	for _, i := range freed {
		c := math.Abs(dot(v, probes[i].slope)) / (math.Sqrt(dot(v, v)) * probes[i].slopeNorm)
		if c >= 0.5 {
			names = append(names, probes[i].p.name)
		}
		if c > best {
			best, bestName = c, probes[i].p.name
		}
	}
	if len(names) == 0 {
		if bestName == "" {
			return "nothing"
		}
		return bestName
	}
	return strings.Join(names, " and ")
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}
