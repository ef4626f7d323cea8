package bundle

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/spec"
)

// WriteSummary prints what the bundle holds: one line per predictor with
// its rows, chosen hyperparameters and errors.
func (b *Bundle) WriteSummary(w io.Writer) error {
	m := &b.meta
	fmt.Fprintf(w, "model bundle: device %s, model %s, %s, %d predictors, training data %s\n",
		m.Device, m.Model, m.Measurement, len(m.Predictors), m.DataChecksum)
	fmt.Fprintf(w, "kernels: %s\n", spec.KernelSourcesLabel(m.KernelSources))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "OPERATOR\tTP\tCONDITIONS\tROWS\tMODEL\tALL ROWS MAPE %\tCV MAPE %\tHOLDOUT MAPE %\tNOISE FLOOR %\tFALLBACK CV MAPE %\tFALLBACK\t")
	var sumAll, sumCV float64
	var nCV int
	var thin []string
	for _, k := range b.keys {
		p := b.preds[k].meta
		fb := p.Fallback.Basis
		if p.Fallback.Basis == BasisRaw {
			fb += " features"
		}
		sumAll += p.AllRows.MAPE
		if p.CV.Rows > 0 {
			sumCV, nCV = sumCV+p.CV.MAPE, nCV+1
		}
		if p.Note != "" {
			thin = append(thin, fmt.Sprintf("  %s: %s", k, p.Note))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t\n", k.Op, k.TP, Conditions(k), p.Rows, ModelLabel(p),
			PctNum(p.AllRows), PctNum(p.CV), PctNum(p.Holdout), p.Repeats.NoiseFloorPct, PctNum(p.FallbackCV), fb)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(b.keys); n > 0 {
		fmt.Fprintf(w, "mean MAPE over %d predictors: %.2f%% on all rows, %.2f%% in %d-fold CV grouped by shape (%d predictors); holdout %.0f%% of the shapes; repeats: %s\n",
			n, sumAll/float64(n), sumCV/float64(max(nCV, 1)), m.Folds, nCV, 100*m.HoldoutFraction, m.Repeats)
	}
	if len(thin) > 0 {
		fmt.Fprintf(w, "%d thin keys (marked * in MODEL):\n%s\n", len(thin), strings.Join(thin, "\n"))
	}
	return nil
}

// ModelLabel names a predictor's model for tables, starred for a thin key.
func ModelLabel(p *PredictorMeta) string {
	if p.Note != "" {
		return p.Model + "*"
	}
	return p.Model
}

// PctNum renders an error for tables: "-" when no row was scored.
func PctNum(e ErrorStats) string {
	if e.Rows == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", e.MAPE)
}

// Conditions renders the parts of a key beyond operator, measurement and TP.
func Conditions(k spec.OpKey) string {
	s := ""
	add := func(v string) {
		if s != "" {
			s += " "
		}
		s += v
	}
	if k.EP > 0 {
		add(fmt.Sprintf("ep=%d", k.EP))
	}
	if k.LocalExperts > 0 {
		add(fmt.Sprintf("experts=%d", k.LocalExperts))
	}
	if k.GatingContext != "" {
		add(k.GatingContext)
	}
	if k.RoutingPath != "" {
		add(k.RoutingPath)
	}
	if k.Workers > 0 {
		add(fmt.Sprintf("workers=%d", k.Workers))
	}
	if s == "" {
		return "-"
	}
	return s
}
