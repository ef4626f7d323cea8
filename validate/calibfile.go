package validate

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/atomicfile"
	"github.com/ftk-dev/ftk/runresult"
	"go.yaml.in/yaml/v3"
)

// formatCalibration prints a calibration on one line.
func formatCalibration(c runresult.Calibration) string {
	var parts []string
	if c.HostMsPerStep > 0 {
		parts = append(parts, fmt.Sprintf("host_ms_per_step %.4g", c.HostMsPerStep))
	}
	if c.HostScale > 0 {
		parts = append(parts, fmt.Sprintf("host_scale x%.4g", c.HostScale))
	}
	if c.HostSpeed > 0 {
		parts = append(parts, fmt.Sprintf("host_speed x%.4g", c.HostSpeed))
	}
	kinds := make([]string, 0, len(c.IssueScale))
	for k := range c.IssueScale {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("issue %s x%.4g", k, c.IssueScale[k]))
	}
	fams := make([]string, 0, len(c.FamilyScale))
	for f := range c.FamilyScale {
		fams = append(fams, f)
	}
	sort.Strings(fams)
	for _, f := range fams {
		parts = append(parts, fmt.Sprintf("%s x%.4g", f, c.FamilyScale[f]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// WriteCalibrationFile writes the fitted calibration as the YAML file that
// "ftk simulate --calibration" reads, atomically, headed by comments saying
// what was fitted on which runs and with what error. Only fitted
// corrections are written: the others keep the simulator's defaults.
func (rep *CalibrationReport) WriteCalibrationFile(path string) error {
	return atomicfile.Write(path, func(w *bufio.Writer) error { return rep.writeCalibrationYAML(w) })
}

func (rep *CalibrationReport) writeCalibrationYAML(w io.Writer) error {
	f := &rep.Final
	var b strings.Builder
	b.WriteString("# ftk validate calibrate: global corrections for ftk simulate --calibration\n")
	fmt.Fprintf(&b, "# fitted on workloads: %s\n", strings.Join(f.FitWorkloads, ", "))
	for _, p := range f.Params {
		if p.Fitted {
			fmt.Fprintf(&b, "#   %s: fitted, %s (start %s; %s)\n", p.Name, num(p.Value), num(p.Start), p.Why)
		} else {
			fmt.Fprintf(&b, "#   %s: not fitted (%s), simulator default kept\n", p.Name, p.Why)
		}
	}
	var names []string
	for _, m := range rep.Metrics {
		names = append(names, m.Name)
	}
	fmt.Fprintf(&b, "# objective: MAPE of %s\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "# fit-set MAPE %.2f%% (before %.2f%%)", f.FitMAPEPct, f.StartMAPEPct)
	if held := rep.heldOutMAPE(); !math.IsNaN(held) {
		fmt.Fprintf(&b, "; held-out MAPE %.2f%%", held)
		if len(rep.Folds) > 0 {
			b.WriteString(" (leave one workload out)")
		}
	}
	b.WriteString("\n")
	cal := f.Calibration
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&cal); err != nil {
		return err
	}
	return enc.Close()
}

// heldOutMAPE is the MAPE over every held-out row and metric (NaN if none).
func (rep *CalibrationReport) heldOutMAPE() float64 {
	var v []float64
	for _, r := range rep.Rows {
		v = append(v, r.HeldOutAPEPct)
	}
	return mean(v)
}

// fitMAPE is the MAPE over every fitted row and metric (NaN if none).
func (rep *CalibrationReport) fitMAPE() float64 {
	var v []float64
	for _, r := range rep.Rows {
		v = append(v, r.FitAPEPct)
	}
	return mean(v)
}

func pctOrDash(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return pct(v)
}

// WriteText writes the fitted corrections, the folds and the error tables
// (before calibration, on fitted runs, on held-out runs) for a terminal.
func (rep *CalibrationReport) WriteText(w io.Writer) error {
	var b strings.Builder
	f := &rep.Final
	fmt.Fprintf(&b, "Calibration fitted on %s (%d evaluations, %d simulations)\n", strings.Join(f.FitWorkloads, ", "), f.Evaluations, f.Simulations)
	t := newTable("correction", "start", "fitted", "probe on the fitted runs")
	for _, p := range f.Params {
		v := num4(p.Value)
		if !p.Fitted {
			v = "not fitted"
		}
		t.add(p.Name, num4(p.Start), v, p.Why)
	}
	t.write(&b)
	if len(rep.Folds) > 0 {
		b.WriteString("\nLeave one workload out\n")
		t := newTable("held out", "fitted on", "calibration", "fit MAPE")
		for _, fo := range rep.Folds {
			t.add(strings.Join(fo.HeldOutWorkloads, ","), strings.Join(fo.FitWorkloads, ","), formatCalibration(fo.Calibration), pct(fo.FitMAPEPct))
		}
		t.write(&b)
	}
	b.WriteString("\nPer configuration and workload (APE of simulated against measured medians)\n")
	t = newTable("config", "workload", "metric", "paired runs", "measured (median)", "APE before", "APE fit set", "APE held out")
	for _, r := range rep.Rows {
		t.add(r.Config, r.Workload, r.Metric, strconv.Itoa(r.Pairs), formatValue(r.MeasuredMedian), pct(r.BeforeAPEPct), pctOrDash(r.FitAPEPct), pctOrDash(r.HeldOutAPEPct))
	}
	t.write(&b)
	b.WriteString("\nOverall per metric (MAPE)\n")
	t = newTable("metric", "before", "fit set", "fit set before", "held out", "held out before")
	for _, o := range rep.Overall {
		t.add(o.Metric, pct(o.BeforeMAPEPct), rowsPct(o.FitMAPEPct, o.FitRows), pctOrDash(o.BeforeFitMAPEPct), rowsPct(o.HeldOutMAPEPct, o.HeldOutRows), pctOrDash(o.BeforeHeldOutMAPEPct))
	}
	t.add("all", pct(rep.beforeMAPE()), pctOrDash(rep.fitMAPE()), "", pctOrDash(rep.heldOutMAPE()), "")
	t.write(&b)
	if len(rep.Unpaired) > 0 {
		fmt.Fprintf(&b, "\nUnpaired runs (%d, not used):\n", len(rep.Unpaired))
		for _, u := range rep.Unpaired {
			fmt.Fprintf(&b, "  %s %s (%s): %s\n", u.Run.Side, u.Run.ID, u.Run.Source, u.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (rep *CalibrationReport) beforeMAPE() float64 {
	var v []float64
	for _, r := range rep.Rows {
		v = append(v, r.BeforeAPEPct)
	}
	return mean(v)
}

func rowsPct(v float64, rows int) string {
	if rows == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d)", pct(v), rows)
}

func num4(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// WriteCSV writes the calibration rows as CSV with full precision (empty
// cells where an error does not apply).
func (rep *CalibrationReport) WriteCSV(w io.Writer) error {
	var b strings.Builder
	b.WriteString("config,workload,metric,paired_runs,measured_median,ape_before_pct,ape_fit_pct,ape_held_out_pct\n")
	cell := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return num(v)
	}
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "%s,%s,%s,%d,%s,%s,%s,%s\n", csvField(r.Config), csvField(r.Workload), r.Metric, r.Pairs, num(r.MeasuredMedian), num(r.BeforeAPEPct), cell(r.FitAPEPct), cell(r.HeldOutAPEPct))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
