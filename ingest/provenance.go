package ingest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// profilingBackend sets in.Backend and in.BackendFrom: the backend the
// rows' profiling_backend cells name, else the backend of the
// ftk-collect.yaml beside the file, else what a file naming none is (a GPU
// profiler's CSV, or torch-cpu for CPU timings; spec.ProfilingBackend).
func profilingBackend(in *dataset.Input, p *parsed, tab *strTable, org origin) error {
	named, from := "", "no profiling_backend column or ftk-collect.yaml: a GPU profiler's file (Frontier, Vidur)"
	if cells := backendCells(p, tab); len(cells) > 1 {
		return fmt.Errorf("ingest %s: rows of several profiling backends (%s) in one file: collect each backend into its own folder",
			in.Path, strings.Join(cells, ", "))
	} else if len(cells) == 1 {
		named, from = cells[0], "profiling_backend column"
	} else if org.collect != nil && org.collect.backend != "" {
		named, from = org.collect.backend, org.collect.path
	}
	onCPU := in.Measurement == spec.CPUTime || strings.EqualFold(in.Device, "cpu")
	if onCPU && named == "" {
		from = "timed on the CPU (measurement type CPU or device cpu)"
	}
	b, err := spec.ProfilingBackend(named, onCPU)
	if err != nil {
		return fmt.Errorf("ingest %s (%s): %w", in.Path, from, err)
	}
	in.Backend, in.BackendFrom = b, from
	return nil
}

// backendCells lists the distinct profiling_backend cells of a file's
// rows, sorted.
func backendCells(p *parsed, tab *strTable) []string {
	col := -1
	for i, e := range familyExtras(p.family) {
		if e.src == profilecsv.ColProfilingBackend {
			col = i
		}
	}
	if col < 0 || p.nExtras == 0 || !p.xseen[col] {
		return nil
	}
	seen := map[string]bool{}
	for i := col; i < len(p.ext); i += p.nExtras {
		if v := p.ext[i]; v.ok() {
			seen[tab.strs[v.id()]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// backends lists the distinct backends of the inputs, sorted.
func backends(inputs []dataset.Input) []string {
	seen := map[string]bool{}
	var out []string
	for _, in := range inputs {
		if in.Backend != "" && !seen[in.Backend] {
			seen[in.Backend] = true
			out = append(out, in.Backend)
		}
	}
	sort.Strings(out)
	return out
}
