package cost

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/spec"
)

// TableCoverage is one op of a simulation as the kernel tables answer it
// over the simulation's query domain.
type TableCoverage struct {
	Op    string
	Shape string
	// Source is the table (with dtype and kernel) that prices the op, or
	// the fallback: the built-in device model.
	Source string
	// Worst is the least exact answer over the query domain (uncovered:
	// the op falls back).
	Worst kerneldb.Fit
	// Domain says where the query domain was probed.
	Domain string
}

// Covered reports whether the tables price the op.
func (c *TableCoverage) Covered() bool { return c.Worst != kerneldb.Uncovered }

// KernelTablesCoverage lists every distinct op of a simulation of model m
// on layout l within limits, with what prices it from the tables, and
// the least exact answer over the query domain: token counts 1 to the
// token budget, decode batches 1 to max_num_seqs over contexts 1 to
// max_model_len, prefill chunks 1 to the token budget after contexts 0 to
// max_model_len minus the chunk.
func KernelTablesCoverage(t *KernelTables, m *spec.Model, l spec.Layout, limits spec.EngineLimits) []TableCoverage {
	l = l.Normalize()
	var ops []spec.Op
	seen := map[string]bool{}
	add := func(o spec.Op) {
		key := o.Name + "|" + o.Shape()
		if !seen[key] {
			seen[key] = true
			ops = append(ops, o)
		}
	}
	first, last, between := spec.ModelOps(m, l)
	for _, o := range first {
		add(o)
	}
	for i := 0; i < m.NumLayers; i++ {
		for _, o := range spec.LayerOps(m, l, i) {
			add(o)
		}
	}
	for _, o := range last {
		add(o)
	}
	if between != nil {
		add(*between)
	}
	tokens := powers(limits.MaxNumBatchedTokens)
	var out []TableCoverage
	for i := range ops {
		o := &ops[i]
		c := TableCoverage{Op: o.Name, Shape: o.Shape(), Source: "built-in device model (roofline): not in the kernel tables", Worst: kerneldb.Uncovered}
		pr, ok := t.OpPredictor(o)
		if p, isTable := pr.(tablePredictor); ok && isTable {
			c.Source, c.Worst = p.table(), kerneldb.Exact
			for _, x := range probes(o, m, l, limits, tokens) {
				if _, f := p.lookup(x); f > c.Worst {
					c.Worst = f
				}
			}
			c.Domain = domainOf(o, limits)
		}
		out = append(out, c)
	}
	return out
}

// powers is 1, 2, 4, ... up to and including n.
func powers(n int) []float64 {
	var out []float64
	for v := 1; v < n; v *= 2 {
		out = append(out, float64(v))
	}
	return append(out, float64(n))
}

func probes(o *spec.Op, m *spec.Model, l spec.Layout, lim spec.EngineLimits, tokens []float64) [][]float64 {
	var out [][]float64
	switch o.Name {
	case spec.OpAttnPrefill:
		for _, c := range tokens {
			out = append(out, []float64{0, c}, []float64{math.Max(0, float64(lim.MaxModelLen)-c), c})
		}
	case spec.OpAttnDecode:
		for _, n := range powers(lim.MaxNumSeqs) {
			for _, ctx := range powers(lim.MaxModelLen) {
				out = append(out, []float64{n, ctx})
			}
		}
	case spec.OpMoEGroupedGEMM:
		for _, t := range tokens {
			out = append(out, []float64{t * float64(m.TopK) / float64(max(l.EP, 1)), 0})
		}
	case spec.OpAllReduce:
		for _, t := range tokens {
			out = append(out, []float64{t * float64(m.HiddenSize) * 2})
		}
	case spec.OpLMHead:
		for _, n := range powers(lim.MaxNumSeqs) {
			out = append(out, []float64{n})
		}
	default:
		for _, t := range tokens {
			out = append(out, []float64{t})
		}
	}
	return out
}

func domainOf(o *spec.Op, lim spec.EngineLimits) string {
	switch o.Name {
	case spec.OpAttnPrefill:
		return fmt.Sprintf("chunks 1-%d after contexts 0-%d", lim.MaxNumBatchedTokens, lim.MaxModelLen)
	case spec.OpAttnDecode:
		return fmt.Sprintf("batches 1-%d over contexts 1-%d", lim.MaxNumSeqs, lim.MaxModelLen)
	case spec.OpLMHead:
		return fmt.Sprintf("sequences 1-%d", lim.MaxNumSeqs)
	}
	return fmt.Sprintf("tokens 1-%d", lim.MaxNumBatchedTokens)
}

// WriteTableCoverage prints the coverage rows and says what falls back.
func WriteTableCoverage(w io.Writer, t *KernelTables, rows []TableCoverage) error {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel tables %s (device %s", t.Dir, t.device)
	for _, r := range t.K.Resolutions {
		fmt.Fprintf(&b, "; %s from vLLM %s", r.Table, r.Measured)
		if r.Note != "" {
			fmt.Fprintf(&b, " (%s)", r.Note)
		}
	}
	b.WriteString(")\n")
	fmt.Fprintf(&b, "%-26s %-13s %-40s %s\n", "op", "worst answer", "shape", "priced by")
	var fallback []string
	for _, r := range rows {
		fmt.Fprintf(&b, "%-26s %-13s %-40s %s", r.Op, r.Worst, r.Shape, r.Source)
		if r.Domain != "" {
			fmt.Fprintf(&b, " over %s", r.Domain)
		}
		b.WriteString("\n")
		if !r.Covered() {
			fallback = append(fallback, r.Op)
		}
	}
	if len(fallback) > 0 {
		fmt.Fprintf(&b, "not in the tables, priced by the built-in device model: %s\n", strings.Join(fallback, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
