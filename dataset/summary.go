package dataset

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/spec"
)

// FeatureSummary is the sampled domain of one feature.
type FeatureSummary struct {
	Name     string
	Min, Max float64
	Distinct int
	// Values lists the distinct values when there are at most
	// summaryValues of them.
	Values []float64
}

// summaryValues is the most distinct values a summary lists.
const summaryValues = 8

// OpSummary describes the samples of one operator and measurement type.
type OpSummary struct {
	Op, Measurement string
	Rows            int
	Keys            int      // distinct predictor keys (TP, EP, contexts, ...)
	TP              []int    // distinct TP degrees
	Variants        []string // distinct variants
	Conflicts       int      // samples flagged as conflicting duplicates
	Features        []FeatureSummary
}

// Summary describes the dataset per operator and measurement type, in
// operator order.
func (d *Dataset) Summary() []OpSummary {
	type acc struct {
		s      OpSummary
		keys   map[spec.OpKey]bool
		tp     map[int]bool
		vars   map[string]bool
		values []map[float64]bool
	}
	groups := map[[2]string]*acc{}
	for _, s := range d.Samples {
		k := [2]string{s.Key.Op, s.Key.Measurement}
		a := groups[k]
		if a == nil {
			names := spec.OpFeatures(s.Key.Op)
			a = &acc{s: OpSummary{Op: s.Key.Op, Measurement: s.Key.Measurement},
				keys: map[spec.OpKey]bool{}, tp: map[int]bool{}, vars: map[string]bool{}}
			for _, n := range names {
				a.s.Features = append(a.s.Features, FeatureSummary{Name: n})
				a.values = append(a.values, map[float64]bool{})
			}
			groups[k] = a
		}
		a.s.Rows++
		a.keys[s.Key] = true
		a.tp[s.Key.TP] = true
		a.vars[s.Variant] = true
		if s.Conflict {
			a.s.Conflicts++
		}
		for j, x := range s.Features {
			if j >= len(a.values) {
				break
			}
			f := &a.s.Features[j]
			if len(a.values[j]) == 0 || x < f.Min {
				f.Min = x
			}
			if len(a.values[j]) == 0 || x > f.Max {
				f.Max = x
			}
			a.values[j][x] = true
		}
	}
	out := make([]OpSummary, 0, len(groups))
	for _, a := range groups {
		s := a.s
		s.Keys = len(a.keys)
		for tp := range a.tp {
			s.TP = append(s.TP, tp)
		}
		slices.Sort(s.TP)
		for v := range a.vars {
			s.Variants = append(s.Variants, v)
		}
		slices.Sort(s.Variants)
		for j := range s.Features {
			f := &s.Features[j]
			f.Distinct = len(a.values[j])
			if f.Distinct <= summaryValues {
				for v := range a.values[j] {
					f.Values = append(f.Values, v)
				}
				slices.Sort(f.Values)
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b OpSummary) int {
		return cmp.Or(strings.Compare(a.Op, b.Op), strings.Compare(a.Measurement, b.Measurement))
	})
	return out
}

// WriteSummary prints the dataset's header and, per operator and
// measurement type, the rows, keys, TP degrees, variants and the range and
// distinct values of every feature.
func WriteSummary(w io.Writer, dir string, d *Dataset) error {
	m := &d.Manifest
	models := strings.Join(m.Models, ", ")
	if models == "" {
		models = "-"
	}
	fmt.Fprintf(w, "dataset %s: device %s, models %s, measurement %s, profiling backend %s\n",
		dir, m.Device, models, strings.Join(m.Measurements, ", "), strings.Join(m.Backends, ", "))
	fmt.Fprintf(w, "%s in %s from %s (schema %d); %s\n",
		Plural(m.Samples, "sample"), Plural(len(m.Files), "Arrow file"), Plural(len(m.Inputs), "input"), m.SchemaVersion, m.Counts())
	fmt.Fprintf(w, "checksum sha256:%s\n", d.Checksum())
	if rows, samples := kernelTraced(m); rows > 0 {
		fmt.Fprintf(w, "warning: %s (%s) of CUDA_EVENT inputs read as kernel time (whole-nanosecond samples): they lack the host gaps of a CUDA event, so a simulation from them under-counts; manifest.json lists them by key (kernel_traced)\n",
			Plural(rows, "row"), Plural(samples, "sample"))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OP\tMEASUREMENT\tROWS\tKEYS\tTP\tVARIANTS\tFEATURE\tMIN\tMAX\tDISTINCT\tVALUES")
	for _, s := range d.Summary() {
		lead := fmt.Sprintf("%s\t%s\t%d\t%d\t%s\t%s", s.Op, s.Measurement, s.Rows, s.Keys, joinInts(s.TP), strings.Join(s.Variants, ","))
		for j, f := range s.Features {
			if j > 0 {
				lead = "\t\t\t\t\t"
			}
			vals := "-"
			if f.Values != nil {
				vals = joinFloats(f.Values)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", lead, f.Name, fmtNum(f.Min), fmtNum(f.Max), f.Distinct, vals)
		}
	}
	return tw.Flush()
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func joinFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmtNum(x)
	}
	return strings.Join(s, " ")
}

// fmtNum prints integers as integers and other values with 4 significant
// digits.
func fmtNum(x float64) string {
	if x == float64(int64(x)) && x < 1e15 && x > -1e15 {
		return strconv.FormatInt(int64(x), 10)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// kernelTraced counts the kernel-traced rows and samples of m's inputs.
func kernelTraced(m *Manifest) (rows, samples int) {
	for _, in := range m.Inputs {
		rows += in.KernelTracedRows
		for _, k := range in.KernelTraced {
			samples += k.Samples
		}
	}
	return rows, samples
}
