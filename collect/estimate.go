package collect

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ftk-dev/ftk/spec"
)

// Costs of a real sweep beyond the timed repetitions: each request builds
// its tensors and synchronises (requestOverheadS); each worker imports
// torch and CUDA once (workerStartS).
const (
	requestOverheadS = 0.02
	workerStartS     = 30
)

// FamilyEstimate is the plan-only summary of one family.
type FamilyEstimate struct {
	Family   spec.Family
	Shapes   int
	Requests int // operator timings: shapes x operators x measurement types
	// GPUSeconds estimates the device time: the roofline time of every
	// request's warmup and timed repetitions (CUDA_EVENT, as wall time),
	// the prefill_hot prefix GEMMs, and requestOverheadS per request.
	GPUSeconds float64
}

// Estimate sizes shapes for a device: per family, shapes, requests and
// estimated GPU time.
func Estimate(shapes []Shape, m *spec.Model, dev *spec.Device, measurements []string, warmup, repeats int) []FamilyEstimate {
	syn := NewSynthetic(dev, 0)
	prefix := spec.Op{Name: "ffn_like_prefix", Family: spec.FamilyLinear, Kernels: 1, K: m.HiddenSize, N: m.HiddenSize, ElemBytes: 2}
	runs := float64(warmup + repeats)
	var out []FamilyEstimate
	idx := map[spec.Family]int{}
	for i := range shapes {
		s := &shapes[i]
		j, ok := idx[s.Family]
		if !ok {
			j = len(out)
			idx[s.Family] = j
			out = append(out, FamilyEstimate{Family: s.Family})
		}
		e := &out[j]
		e.Shapes++
		meas := measurements
		if s.Family == spec.FamilyCPU {
			meas = []string{spec.HostWall}
		}
		for k := range s.Ops {
			o := &s.Ops[k]
			req := newRequest(m, s, o, spec.DefaultBlockSize, spec.CUDAEvent, warmup, repeats) // the page size hardly moves an estimate
			ms := syn.baseMs(req)
			if s.GatingContext == spec.GatingPrefillHot && (o.Name == spec.OpMoEGatingLinear || o.Name == spec.OpMoERoutingTopK) {
				ms += hotPrefix * syn.roof.EventMs(&prefix, []float64{float64(s.Tokens)})
			}
			e.Requests += len(meas)
			e.GPUSeconds += float64(len(meas)) * (ms*runs/1e3 + requestOverheadS)
		}
	}
	return out
}

// hotPrefix is the number of FFN-like GEMMs the worker runs before a
// prefill_hot gating op (HOT_PREFIX in ftk_worker.py).
const hotPrefix = 20

// WritePlan prints what a sweep would do: shapes, requests and estimated
// GPU time per family, and whether the plan covers the query domain.
func WritePlan(w io.Writer, p *Plan, shapes []Shape, dev *spec.Device, measurements []string, warmup, repeats, workers int) error {
	c := p.Config
	var ls []string
	for _, l := range c.Layouts {
		ls = append(ls, l.String())
	}
	fmt.Fprintf(w, "plan: %s on %s, layouts %s, limits: %d batched tokens, %d sequences, model length %d, block size %d\n",
		c.Model.Name, dev.Name, strings.Join(ls, " "), c.Limits.MaxNumBatchedTokens, c.Limits.MaxNumSeqs, c.Limits.MaxModelLen, c.Limits.BlockSize)
	fmt.Fprintf(w, "measurements: %s; %d warmup + %d timed repetitions per operator\n", strings.Join(measurements, ", "), warmup, repeats)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "FAMILY\tSHAPES\tREQUESTS\tEST. GPU TIME\t")
	var total FamilyEstimate
	for _, e := range Estimate(shapes, c.Model, dev, measurements, warmup, repeats) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t\n", FamilyName(e.Family), e.Shapes, e.Requests, seconds(e.GPUSeconds))
		total.Shapes += e.Shapes
		total.Requests += e.Requests
		total.GPUSeconds += e.GPUSeconds
	}
	total.GPUSeconds += workerStartS * float64(max(workers, 1))
	fmt.Fprintf(tw, "total\t%d\t%d\t%s\t\n", total.Shapes, total.Requests, seconds(total.GPUSeconds))
	if err := tw.Flush(); err != nil {
		return err
	}
	if workers > 1 {
		fmt.Fprintf(w, "with %d GPUs in parallel: about %s\n", workers, seconds(total.GPUSeconds/float64(workers)))
	}
	planned := map[spec.Family]bool{}
	for _, f := range c.Families {
		planned[f] = true
	}
	keys := 0
	for _, l := range c.Layouts {
		for _, e := range spec.QueryDomain(c.Model, l, c.Limits) {
			if planned[spec.OpFamily(e.Key.Op)] {
				keys++
			}
		}
	}
	var gaps []Gap
	for _, g := range CheckCoverage(p.Shapes, c.Model, c.Layouts, c.Limits) {
		if planned[spec.OpFamily(g.Key.Op)] {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) == 0 {
		fmt.Fprintf(w, "coverage: the plan samples every feature range the simulation queries of its families (spec.QueryDomain: %d predictor keys)\n", keys)
		return nil
	}
	fmt.Fprintf(w, "coverage: %d gaps between the plan and the simulation's query domain:\n", len(gaps))
	for _, g := range gaps {
		fmt.Fprintf(w, "  %s\n", g)
	}
	return nil
}

// seconds renders a duration estimate.
func seconds(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
