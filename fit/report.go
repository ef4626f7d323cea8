package fit

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// OpError is how one predictor does on the rows of a dataset.
type OpError struct {
	Key spec.OpKey
	// Rows is the dataset's rows of the key (Stats.Rows those scored).
	Rows int
	// Missing: the dataset has the operator but the bundle no predictor.
	Missing bool
	// Stats compare predictions with the dataset's medians on every row;
	// Extrapolated counts rows outside the predictor's sampled domain.
	Stats        bundle.ErrorStats
	Extrapolated int
	// CV and Holdout are the predictor's own figures from the bundle.
	// CV and Holdout are the predictor's own figures from the bundle;
	// Model what answers the key (starred: a thin key).
	CV, Holdout bundle.ErrorStats
	Model       string
	// NoiseFloorPct is the spread of the dataset's repeated measurements
	// (bundle.Repeats.NoiseFloorPct): about the least error any predictor
	// of one time per shape has on these rows.
	NoiseFloorPct float64
}

// Report predicts every row of ts with b and summarises the errors per
// operator key. The bundle must match the rows' device and measurement.
func Report(b *bundle.Bundle, ts *TrainingSet) ([]OpError, error) {
	if err := b.Check(ts.Device, ts.Measurement); err != nil {
		return nil, err
	}
	var out []OpError
	for _, o := range ts.Ops {
		p, ok := b.Predictor(o.Key)
		if !ok {
			out = append(out, OpError{Key: o.Key, Rows: len(o.Rows), Missing: true})
			continue
		}
		pos, _ := positiveRows(o.Rows)
		e := OpError{Key: o.Key, Rows: len(o.Rows), CV: p.Meta().CV, Holdout: p.Meta().Holdout, Model: bundle.ModelLabel(p.Meta()),
			NoiseFloorPct: repeatStats(pos).NoiseFloorPct}
		pred := make([]float64, len(o.Rows))
		for i, r := range o.Rows {
			if len(r.X) != len(p.Meta().Features) {
				return nil, fmt.Errorf("report: %s:%d: %s has %d features, the predictor %d", r.Source, r.Line, o.Key, len(r.X), len(p.Meta().Features))
			}
			if !p.InDomain(r.X) {
				e.Extrapolated++
			}
			pred[i] = p.PredictUncounted(r.X)
		}
		e.Stats = errorStats(pred, o.Rows)
		out = append(out, e)
	}
	return out, nil
}

// WriteReport prints the per-operator error table.
func WriteReport(w io.Writer, rows []OpError) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "OPERATOR\tTP\tCONDITIONS\tROWS\tMODEL\tMAPE %\tP50 %\tP90 %\tMAX %\tOUT OF DOMAIN\tCV MAPE %\tHOLDOUT MAPE %\tNOISE FLOOR %\t")
	var sum float64
	var n int
	for _, r := range rows {
		cond := bundle.Conditions(r.Key)
		if r.Missing {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\tno predictor\t\t\t\t\t\t\t\t\t\n", r.Key.Op, r.Key.TP, cond, r.Rows)
			continue
		}
		sum, n = sum+r.Stats.MAPE, n+1
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.1f\t%d\t%s\t%s\t%.2f\t\n", r.Key.Op, r.Key.TP, cond, r.Rows, r.Model,
			r.Stats.MAPE, r.Stats.P50, r.Stats.P90, r.Stats.Max, r.Extrapolated, bundle.PctNum(r.CV), bundle.PctNum(r.Holdout), r.NoiseFloorPct)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n > 0 {
		_, err := fmt.Fprintf(w, "mean MAPE over %d predictors: %.2f%% (MAPE: every row of this dataset; CV and holdout: the bundle's own, grouped by shape; noise floor: the spread of repeated measurements; * a thin key)\n", n, sum/float64(n))
		return err
	}
	return nil
}

// ReportDataset loads a bundle and a profile dataset directory and writes
// the per-operator error table of the bundle on the dataset's rows of the
// bundle's measurement type: the body of "ftk validate ops BUNDLE DATASET".
func ReportDataset(w io.Writer, bundlePath, datasetDir string) error {
	b, err := bundle.Load(bundlePath)
	if err != nil {
		return err
	}
	ds, err := dataset.Load(datasetDir)
	if err != nil {
		return err
	}
	ts, err := FromDatasetOf(ds, b.Measurement(), b.Model())
	if err != nil {
		return err
	}
	rows, err := Report(b, ts)
	if err != nil {
		return fmt.Errorf("validate ops %s on %s: %w", bundlePath, datasetDir, err)
	}
	same := "other data than it was trained on"
	if ts.Checksum == b.Meta().DataChecksum {
		same = "the data it was trained on (in-sample)"
	}
	fmt.Fprintf(w, "bundle %s (%s, %s, %s) on dataset %s: %s\n", bundlePath, b.Device(), b.Model(), b.Measurement(), datasetDir, same)
	return WriteReport(w, rows)
}
