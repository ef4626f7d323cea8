package fit

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/bundle"
	"github.com/ftk-dev/ftk/spec"
)

// DefaultGapRatio is the default widest ratio between neighbouring sampled
// values of a feature before the interval between them counts as a gap.
const DefaultGapRatio = 2.0

// CoverageRequest says what a simulation will ask: a model on a layout
// within engine limits (spec.QueryDomain).
type CoverageRequest struct {
	Model  *spec.Model
	Layout spec.Layout
	Limits spec.EngineLimits
	// Device names the device in the suggested collect commands.
	Device string
	// GapRatio: neighbouring sampled values of a feature more than this
	// ratio apart (below 1, read as 1) inside the needed range are reported
	// as gaps (default DefaultGapRatio).
	GapRatio float64
}

// Coverage statuses, from best to worst.
const (
	StatusCovered     = "covered"
	StatusGaps        = "gaps"
	StatusExtrapolate = "extrapolates"
	StatusMissing     = "missing"
)

// FeatureCoverage compares the needed and the sampled range of a feature.
type FeatureCoverage struct {
	Feature string
	Need    spec.Range
	// Have is the sampled range (zero when the predictor is missing).
	Have spec.Range
	// Gaps are intervals inside Need between neighbouring sampled values
	// more than the gap ratio apart.
	Gaps []spec.Range
}

// Below and Above report whether the need leaves the sampled range.
func (f FeatureCoverage) Below() bool { return f.Need.Min < f.Have.Min }

// Above reports whether the need exceeds the sampled maximum.
func (f FeatureCoverage) Above() bool { return f.Need.Max > f.Have.Max }

// CoverageEntry is the verdict for one operator of the query domain.
type CoverageEntry struct {
	// Need is the key the simulation asks for; Have the predictor's key
	// that answers it (zero when Status is missing).
	Need, Have spec.OpKey
	Status     string
	Features   []FeatureCoverage
	// Model is what answers the key (bundle.PredictorMeta.Model) and Thin
	// says the key was too thin for a forest of its own.
	Model string
	Thin  bool
}

// CoverageReport is the result of CheckCoverage.
type CoverageReport struct {
	Request     CoverageRequest
	Measurement string
	Entries     []CoverageEntry
}

// CheckCoverage compares the query domain of req with the sampled domain of
// every predictor of b. Needed keys match predictors by operator and TP, and
// by EP, local experts, gating context, routing path and group size where
// the need sets them; the best-covering match is kept.
func CheckCoverage(b *bundle.Bundle, req CoverageRequest) (*CoverageReport, error) {
	if req.Model == nil {
		return nil, errors.New("coverage: no model given")
	}
	if err := req.Layout.Validate(req.Model); err != nil {
		return nil, fmt.Errorf("coverage: %w", err)
	}
	lim, err := req.Limits.Resolve(req.Model)
	if err != nil {
		return nil, fmt.Errorf("coverage: %w", err)
	}
	req.Limits = lim
	if req.GapRatio == 0 {
		req.GapRatio = DefaultGapRatio
	}
	req.GapRatio = math.Max(req.GapRatio, 1)
	rep := &CoverageReport{Request: req, Measurement: b.Measurement()}
	for _, e := range spec.QueryDomain(req.Model, req.Layout, lim) {
		need := e.Key
		need.Measurement = b.Measurement()
		best := CoverageEntry{Need: need, Status: StatusMissing}
		for _, f := range spec.OpFeatures(need.Op)[:len(e.Ranges)] {
			best.Features = append(best.Features, FeatureCoverage{Feature: f})
		}
		for j := range best.Features {
			best.Features[j].Need = e.Ranges[j]
		}
		for _, k := range b.Keys() {
			if !matches(need, k) && !(bundle.MatchesAnyTP(need, k) && bundle.SameShape(req.Model, need, k)) {
				continue
			}
			p, _ := b.Predictor(k)
			c := coverOne(need, p.Meta(), e.Ranges, req.GapRatio)
			if rank(c.Status) < rank(best.Status) {
				best = c
			}
		}
		rep.Entries = append(rep.Entries, best)
	}
	return rep, nil
}

// matches reports whether predictor key k can answer the needed key.
func matches(need, k spec.OpKey) bool { return need.TP == k.TP && bundle.MatchesAnyTP(need, k) }

func rank(status string) int {
	return slices.Index([]string{StatusCovered, StatusGaps, StatusExtrapolate, StatusMissing}, status)
}

// coverOne compares the needed ranges with one predictor's domain.
func coverOne(need spec.OpKey, pm *bundle.PredictorMeta, ranges []spec.Range, gapRatio float64) CoverageEntry {
	c := CoverageEntry{Need: need, Have: pm.Key, Status: StatusCovered, Model: pm.Model, Thin: pm.Note != ""}
	for j, r := range ranges {
		d := pm.Domain[j]
		fc := FeatureCoverage{Feature: d.Name, Need: r, Have: spec.Range{Min: d.Min, Max: d.Max}}
		for i := 1; i < len(d.Values); i++ {
			a, b := d.Values[i-1], d.Values[i]
			if b <= r.Min || a >= r.Max {
				continue
			}
			if b > gapRatio*math.Max(a, 1) {
				fc.Gaps = append(fc.Gaps, spec.Range{Min: a, Max: b})
			}
		}
		switch {
		case fc.Below() || fc.Above():
			c.Status = StatusExtrapolate
		case len(fc.Gaps) > 0 && c.Status == StatusCovered:
			c.Status = StatusGaps
		}
		c.Features = append(c.Features, fc)
	}
	return c
}

// OK reports whether the simulation stays inside the sampled domain (gaps
// are allowed).
func (r *CoverageReport) OK() bool {
	for _, e := range r.Entries {
		if rank(e.Status) > rank(StatusGaps) {
			return false
		}
	}
	return true
}

// Err is nil when the simulation stays inside the sampled domain, else an
// error that names every operator and range it would leave.
func (r *CoverageReport) Err() error {
	var bad []string
	for _, e := range r.Entries {
		switch e.Status {
		case StatusMissing:
			bad = append(bad, e.Need.String()+": no predictor")
		case StatusExtrapolate:
			var fs []string
			for _, f := range e.Features {
				if f.Below() || f.Above() {
					fs = append(fs, fmt.Sprintf("%s needs %s, sampled %s", f.Feature, rangeStr(f.Need), rangeStr(f.Have)))
				}
			}
			bad = append(bad, e.Need.String()+": "+strings.Join(fs, "; "))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("coverage: the simulation would leave the sampled domain of %d operators (%s):\n  %s",
		len(bad), r.describe(), strings.Join(bad, "\n  "))
}

func (r *CoverageReport) describe() string {
	q := r.Request
	return fmt.Sprintf("%s on %s, max-num-batched-tokens %d, max-num-seqs %d, max-model-len %d",
		q.Model.Name, q.Layout, q.Limits.MaxNumBatchedTokens, q.Limits.MaxNumSeqs, q.Limits.MaxModelLen)
}

func rangeStr(r spec.Range) string { return fmt.Sprintf("[%s, %s]", fnum(r.Min), fnum(r.Max)) }

func fnum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.4g", v)
}

// Print writes the per-operator table, then the collect commands that would
// close what is missing or extrapolated.
func (r *CoverageReport) Print(w io.Writer) error {
	fmt.Fprintf(w, "coverage of %s (%s predictors; gaps: neighbouring samples more than %gx apart)\n", r.describe(), r.Measurement, r.Request.GapRatio)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATOR\tTP\tFEATURE\tNEEDED\tSAMPLED\tSTATUS\tDETAIL")
	for _, e := range r.Entries {
		name := e.Need.Op
		if c := bundle.Conditions(e.Need); c != "-" {
			name += " (" + c + ")"
		}
		for i, f := range e.Features {
			have, status, detail := "-", e.Status, ""
			if e.Status != StatusMissing {
				have = rangeStr(f.Have)
				switch {
				case f.Below() && f.Above():
					status, detail = StatusExtrapolate, "below and above the samples"
				case f.Below():
					status, detail = StatusExtrapolate, "below the samples"
				case f.Above():
					status, detail = StatusExtrapolate, fmt.Sprintf("%.3gx the largest sample", f.Need.Max/math.Max(f.Have.Max, 1))
				case len(f.Gaps) > 0:
					status, detail = StatusGaps, gapStr(f.Gaps)
				default:
					status = StatusCovered
				}
				if i == 0 && e.Have.TP != e.Need.TP {
					detail = strings.TrimSpace(detail + fmt.Sprintf(" (TP%d predictor: same per-GPU shape)", e.Have.TP))
				}
				if i == 0 && e.Thin {
					detail = strings.TrimSpace(detail + fmt.Sprintf(" (thin key: %s)", e.Model))
				}
			} else if i == 0 {
				detail = "no predictor for this operator and TP"
			}
			op, tp := name, fmt.Sprint(e.Need.TP)
			if i > 0 {
				op, tp = "", ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", op, tp, f.Feature, rangeStr(f.Need), have, status, detail)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if cmds := r.CollectCommands(); len(cmds) > 0 {
		fmt.Fprintln(w, "to sample what is missing or would be extrapolated:")
		for _, c := range cmds {
			fmt.Fprintln(w, "  "+c)
		}
	}
	return nil
}

func gapStr(gaps []spec.Range) string {
	var s []string
	for i, g := range gaps {
		if i == 3 {
			s = append(s, fmt.Sprintf("and %d more", len(gaps)-3))
			break
		}
		s = append(s, fmt.Sprintf("%s..%s", fnum(g.Min), fnum(g.Max)))
	}
	return "gaps " + strings.Join(s, ", ")
}

// collectFamilies are ftk collect's names of the operator families.
var collectFamilies = map[spec.Family]string{
	spec.FamilyLinear: "linear", spec.FamilyAttention: "attention", spec.FamilyMoE: "moe",
	spec.FamilyCollective: "collectives", spec.FamilyCPU: "host",
}

// CollectCommands suggests the ftk collect command that samples every
// operator family with a missing or extrapolated operator over the
// simulation's whole query domain (nil when nothing is missing).
func (r *CoverageReport) CollectCommands() []string {
	var fams []string
	for _, e := range r.Entries {
		if rank(e.Status) < rank(StatusExtrapolate) {
			continue
		}
		f := spec.OpFamily(e.Need.Op)
		name, ok := collectFamilies[f]
		if !ok {
			name = string(f)
		}
		if !slices.Contains(fams, name) {
			fams = append(fams, name)
		}
	}
	if len(fams) == 0 {
		return nil
	}
	order := []string{"linear", "attention", "moe", "collectives", "host"}
	slices.SortFunc(fams, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) })
	q := r.Request
	l := q.Layout.Normalize()
	dev := q.Device
	if dev == "" {
		dev = "DEVICE"
	}
	c := fmt.Sprintf("ftk collect %s --model %s --device %s --tp %d", strings.Join(fams, " "), q.Model.Name, dev, l.TP)
	if l.EP > 1 {
		c += fmt.Sprintf(" --ep %d", l.EP)
	}
	if l.PP > 1 {
		c += fmt.Sprintf(" --pp %d", l.PP)
	}
	c += fmt.Sprintf(" --max-num-batched-tokens %d --max-num-seqs %d --max-model-len %d",
		q.Limits.MaxNumBatchedTokens, q.Limits.MaxNumSeqs, q.Limits.MaxModelLen)
	if b := q.Limits.BlockSize; b > 0 && b != spec.DefaultBlockSize {
		// attention rows are timed at the page size they were collected with
		c += fmt.Sprintf(" --block-size %d", b)
	}
	switch r.Measurement {
	case spec.KernelOnly:
		c += " --measurements kernel_only"
	case spec.CUDAEvent:
		c += " --measurements cuda_event"
	}
	return []string{c}
}
