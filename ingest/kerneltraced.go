package ingest

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// kernelTrace gathers the rows of a file that read as kernel time
// (spec.KernelTraced); they are reported when the file is CUDA_EVENT.
type kernelTrace struct {
	rows    int
	lines   []int          // the first few
	samples map[string]int // by predictor key
}

// How many kernel-traced lines and keys the notes name (the manifest has
// every key).
const (
	maxTracedLines = 5
	maxTracedKeys  = 12
)

// traceRow checks the row just read, whose samples are the records from
// index start on.
func (r *reader) traceRow(start int) {
	if r.kept == 0 || r.fam == spec.FamilyCPU || !spec.KernelTraced(r.rowMs) {
		return
	}
	t := &r.traced
	t.rows++
	if len(t.lines) <= maxTracedLines { // one more, for lineList's "..."
		t.lines = append(t.lines, r.line)
	}
	if t.samples == nil {
		t.samples = map[string]int{}
	}
	for i := start; i < r.nrecs; i++ {
		rec := &r.recs[i/cap(r.recs[0])][i%cap(r.recs[0])]
		s := r.tab.strs
		k := spec.OpKey{Op: s[rec.op], Measurement: spec.CUDAEvent, TP: int(rec.tp), EP: int(rec.ep), LocalExperts: int(rec.local),
			GatingContext: s[rec.gctx], RoutingPath: s[rec.rpath], Workers: int(rec.workers), CrossNode: rec.cross}
		t.samples[k.String()]++
	}
}

// report records the kernel-traced rows of a CUDA_EVENT input: by key in
// the manifest, and as notes that say what they mean and what to do.
func (t *kernelTrace) report(in *dataset.Input) {
	if t.rows == 0 {
		return
	}
	keys := make([]string, 0, len(t.samples))
	for k := range t.samples {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	in.KernelTracedRows = t.rows
	in.Notes = append(in.Notes, fmt.Sprintf("%d of %d rows (lines %s) read as kernel time, not CUDA events: "+
		"every sample is a whole number of nanoseconds, where a CUDA event pair gives float32 milliseconds (spec.KernelTraced). "+
		"They are kept as %s, as the file says, but lack the host gaps between launches, so a simulation from them under-counts: "+
		"move those rows to a *_kernel_only.csv file (measurement_type %s) and ingest again",
		t.rows, in.RowsIn, lineList(t.lines, maxTracedLines), spec.CUDAEvent, spec.KernelOnly))
	var b strings.Builder
	for i, k := range keys {
		in.KernelTraced = append(in.KernelTraced, dataset.KeyCount{Key: k, Samples: t.samples[k]})
		switch {
		case i == maxTracedKeys:
			fmt.Fprintf(&b, ", ... (%d keys in all: manifest.json, kernel_traced)", len(keys))
		case i > maxTracedKeys:
		case i > 0:
			b.WriteString(", ")
			fallthrough
		default:
			fmt.Fprintf(&b, "%s %d", k, t.samples[k])
		}
	}
	in.Notes = append(in.Notes, "kernel-traced samples by key: "+b.String())
}
