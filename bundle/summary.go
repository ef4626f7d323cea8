package bundle

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/spec"
)

// WriteSummary prints what the bundle holds: one line per predictor with
// its rows, chosen hyperparameters and errors.
func (b *Bundle) WriteSummary(w io.Writer) error {
	m := &b.meta
	fmt.Fprintf(w, "model bundle: device %s, model %s, %s, %d predictors, training data %s\n",
		m.Device, m.Model, m.Measurement, len(m.Predictors), m.DataChecksum)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "OPERATOR\tTP\tCONDITIONS\tROWS\tDROPPED\tTARGET\tMIN LEAF\tCV MAPE %\tHOLDOUT MAPE %\tFALLBACK CV MAPE %\tFALLBACK\t")
	var sum float64
	for _, k := range b.keys {
		p := b.preds[k].meta
		dropped := 0
		for _, d := range p.Dropped {
			dropped += d.Rows
		}
		fb := p.Fallback.Basis
		if p.Fallback.Basis == BasisRaw {
			fb += " features"
		}
		sum += p.CV.MAPE
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%s\t%d\t%.2f\t%s\t%.2f\t%s\t\n", k.Op, k.TP, Conditions(k), p.Rows, dropped,
			p.Target, p.Params.MinLeaf, p.CV.MAPE, PctNum(p.Holdout), p.FallbackCV.MAPE, fb)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if n := len(b.keys); n > 0 {
		_, err := fmt.Fprintf(w, "mean CV MAPE %.2f%% over %d predictors (%d-fold; holdout %.0f%% of the rows)\n", sum/float64(n), n, m.Folds, 100*m.HoldoutFraction)
		return err
	}
	return nil
}

func PctNum(e ErrorStats) string {
	if e.Rows == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", e.MAPE)
}

// conditions renders the parts of a key beyond operator, measurement and TP.
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
