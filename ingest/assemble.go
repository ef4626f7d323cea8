package ingest

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/spec"
)

// assemble sorts the records into output files, flags duplicated shapes
// and fills the manifest.
func assemble(inputs []dataset.Input, all []*parsed, tab *strTable) *build {
	type fileKey struct {
		family      spec.Family
		measurement string
	}
	b := &build{tab: tab}
	byFile := map[fileKey]*outFile{}
	n := 0
	for i, p := range all {
		b.ext = append(b.ext, p.ext)
		b.xseen = append(b.xseen, p.xseen)
		k := fileKey{p.family, inputs[i].Measurement}
		f := byFile[k]
		if f == nil && p.nRecs() > 0 {
			f = &outFile{name: fmt.Sprintf("%s.%s.arrow", k.family, k.measurement), family: k.family, measurement: k.measurement}
			byFile[k] = f
		}
		if f != nil && p.nRecs() > 0 {
			f.inputs = append(f.inputs, int32(i))
		}
		for _, chunk := range p.recs {
			for j := range chunk {
				f.recs = append(f.recs, &chunk[j])
			}
			n += len(chunk)
		}
	}
	rank := tab.ranks()
	srcRank := make([]int32, len(inputs))
	for i, r := range sortedIndex(len(inputs), func(a, c int) int { return strings.Compare(inputs[a].Path, inputs[c].Path) }) {
		srcRank[r] = int32(i)
	}
	for _, f := range byFile {
		sortRecords(f.recs, rank, srcRank)
		b.files = append(b.files, f)
	}
	slices.SortFunc(b.files, func(a, c *outFile) int { return strings.Compare(a.name, c.name) })

	m := &b.m
	m.Kind, m.SchemaVersion = dataset.ManifestKind, dataset.SchemaVersion
	m.Inputs = inputs
	models, meas, kernels := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, in := range inputs {
		for _, k := range in.KernelSources {
			kernels[k] = true
		}
		m.Device = in.Device
		if in.Model != "" {
			models[in.Model] = true
		}
		m.ExcludedRows += in.ExcludedRows
		m.DuplicateRows += in.DuplicateRows
	}
	seen := map[int32]bool{}
	for _, f := range b.files {
		meas[f.measurement] = true
		for _, r := range f.recs {
			if r.model != 0 && !seen[r.model] {
				seen[r.model] = true
				models[tab.strs[r.model]] = true
			}
		}
	}
	m.Models = sortedKeys(models)
	if len(m.Models) == 1 {
		m.Model = m.Models[0]
	}
	m.Measurements = sortedKeys(meas)
	m.KernelSources = sortedKeys(kernels)
	b.flagDuplicates()
	m.Samples = n
	m.Notes = []string{
		"features are in spec.OpFeatures order; attention batches of several sequences are reduced with spec.PrefillEquivalent / spec.DecodeEquivalent (variant mixed or true_mixed)",
		"collective samples have no model: network timings do not depend on it",
		fmt.Sprintf("duplicated shapes are kept; they conflict (flagged) when their medians are more than %g%% apart and their [min, max] ranges do not all overlap", dataset.ConflictTolerance*100),
	}
	return b
}

func (p *parsed) nRecs() int {
	n := 0
	for _, c := range p.recs {
		n += len(c)
	}
	return n
}

// sortedIndex returns 0..n-1 ordered by compare.
func sortedIndex(n int, compare func(a, b int) int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, compare)
	return idx
}

// flagDuplicates counts duplicated shapes and marks conflicting ones. The
// files are sorted, so the samples of a shape are adjacent.
func (b *build) flagDuplicates() {
	m := &b.m
	m.Conflicts = []dataset.Conflict{}
	for _, f := range b.files {
		for i := 0; i < len(f.recs); {
			j := i + 1
			for j < len(f.recs) && sameShape(f.recs[i], f.recs[j]) {
				j++
			}
			g := f.recs[i:j]
			i = j
			if len(g) < 2 {
				continue
			}
			m.DuplicatedShapes++
			if !conflicting(g) {
				continue
			}
			r0 := g[0]
			c := dataset.Conflict{Key: b.key(r0).String(), Features: append([]float64(nil), r0.f[:r0.nf]...), Variant: variantNames[r0.variant],
				MedianMinMs: math.Inf(1), MedianMaxMs: math.Inf(-1)}
			if r0.model != 0 {
				c.Key = b.tab.strs[r0.model] + " " + c.Key
			}
			for _, r := range g {
				r.conflict = true
				c.MedianMinMs = math.Min(c.MedianMinMs, r.median)
				c.MedianMaxMs = math.Max(c.MedianMaxMs, r.median)
				c.Samples++
				src := m.Inputs[r.in].Path
				if n := len(c.At); n == 0 || c.At[n-1].Source != src {
					c.At = append(c.At, dataset.SourceLines{Source: src})
				}
				at := &c.At[len(c.At)-1]
				at.Lines = append(at.Lines, int(r.line))
			}
			m.Conflicts = append(m.Conflicts, c)
		}
	}
}

// conflicting reports whether samples of one shape disagree: their medians
// are more than ConflictTolerance apart and, where the format has min/max,
// their [min, max] ranges do not all overlap.
func conflicting(g []*record) bool {
	lo, hi := math.Inf(-1), math.Inf(1)
	mlo, mhi := math.Inf(1), math.Inf(-1)
	for _, r := range g {
		if !math.IsNaN(r.min) && !math.IsNaN(r.max) {
			lo, hi = math.Max(lo, r.min), math.Min(hi, r.max)
		}
		mlo, mhi = math.Min(mlo, r.median), math.Max(mhi, r.median)
	}
	return mhi > mlo*(1+dataset.ConflictTolerance) && lo > hi
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
