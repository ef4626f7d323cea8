package validate

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Row is one line of the per-configuration table: one configuration,
// workload and metric.
type Row struct {
	Config   string
	Workload string
	Metric   string
	// Pairs is the number of paired runs behind the row.
	Pairs int
	// MeasuredMedian and SimulatedMedian are medians over the repetitions
	// of each side.
	MeasuredMedian  float64
	SimulatedMedian float64
	// APEPct is |sim-meas|/|meas| in percent; SignedPct is (sim-meas)/|meas|
	// in percent (positive: the simulator over-predicts).
	APEPct    float64
	SignedPct float64
}

// Overall summarises one metric over all rows.
type Overall struct {
	Metric        string
	Rows          int // configuration/workload rows
	Pairs         int // paired runs behind them
	MAPEPct       float64
	MedianAPEPct  float64
	MaxAPEPct     float64
	MeanSignedPct float64
}

// Report is the result of a comparison.
type Report struct {
	Metrics  []Metric
	Pairs    []Pair
	Rows     []Row
	Overall  []Overall
	Unpaired []Unpaired
}

// Compare checks every run, pairs them and tabulates the given metrics.
func Compare(runs []*Run, metrics []Metric) (*Report, error) {
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
		return nil, fmt.Errorf("no measured run has a simulated partner (%d runs, all unpaired): check their configuration and workload labels", len(runs))
	}
	rows, err := Tabulate(pairs, metrics)
	if err != nil {
		return nil, err
	}
	return &Report{Metrics: metrics, Pairs: pairs, Rows: rows, Overall: Summarize(rows, metrics), Unpaired: unpaired}, nil
}

// Tabulate computes one row per configuration, workload and metric from
// pairs, in the order configurations and workloads first appear in pairs.
func Tabulate(pairs []Pair, metrics []Metric) ([]Row, error) {
	var keys [][2]string
	groups := map[[2]string][]Pair{}
	for _, p := range pairs {
		k := [2]string{p.Measured.ID.Config, p.Measured.ID.Workload}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	var rows []Row
	for _, k := range keys {
		group := groups[k]
		for _, m := range metrics {
			meas, err := sideValues(group, Measured, m)
			if err != nil {
				return nil, err
			}
			sim, err := sideValues(group, Simulated, m)
			if err != nil {
				return nil, err
			}
			mm, sm := spec.Percentile(meas, 50), spec.Percentile(sim, 50)
			if mm == 0 {
				return nil, fmt.Errorf("%s/%s: measured %s is 0: percentage error undefined", k[0], k[1], m.Name)
			}
			rows = append(rows, Row{
				Config: k[0], Workload: k[1], Metric: m.Name, Pairs: len(group),
				MeasuredMedian: mm, SimulatedMedian: sm,
				APEPct: APEPct(mm, sm), SignedPct: SignedPct(mm, sm),
			})
		}
	}
	return rows, nil
}

// sideValues returns the metric of each distinct run of one side of the
// pairs (a run paired several times counts once).
func sideValues(pairs []Pair, side Side, m Metric) ([]float64, error) {
	seen := map[*Run]bool{}
	var v []float64
	for _, p := range pairs {
		r := p.Measured
		if side == Simulated {
			r = p.Simulated
		}
		if seen[r] {
			continue
		}
		seen[r] = true
		x := m.Value(r)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s: %s is %v (e.g. no request with two or more output tokens for TPOT)", r, m.Name, x)
		}
		v = append(v, x)
	}
	return v, nil
}

// Summarize computes, per metric, MAPE, median APE, max APE and mean signed
// error over the rows of that metric.
func Summarize(rows []Row, metrics []Metric) []Overall {
	out := make([]Overall, 0, len(metrics))
	for _, m := range metrics {
		o := Overall{Metric: m.Name}
		var apes, signed []float64
		for _, r := range rows {
			if r.Metric != m.Name {
				continue
			}
			o.Rows++
			o.Pairs += r.Pairs
			apes = append(apes, r.APEPct)
			signed = append(signed, r.SignedPct)
		}
		if o.Rows == 0 {
			continue
		}
		o.MAPEPct = mean(apes)
		o.MedianAPEPct = spec.Percentile(apes, 50)
		o.MaxAPEPct = math.Inf(-1)
		for _, a := range apes {
			o.MaxAPEPct = max(o.MaxAPEPct, a)
		}
		o.MeanSignedPct = mean(signed)
		out = append(out, o)
	}
	return out
}

// APEPct is the absolute percentage error of sim against meas.
func APEPct(meas, sim float64) float64 { return math.Abs(sim-meas) / math.Abs(meas) * 100 }

// SignedPct is the signed percentage error of sim against meas: positive
// when the simulation over-predicts.
func SignedPct(meas, sim float64) float64 { return (sim - meas) / math.Abs(meas) * 100 }
