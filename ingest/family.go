package ingest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// Dialects: which tool wrote a file, as far as its columns tell.
const (
	dialectFrontier     = "frontier"
	dialectVidurMLP     = "vidur_mlp"
	dialectVidurNetwork = "vidur_network"
	dialectLegacyMoE    = "frontier_legacy_moe"
	dialectCPU          = "cpu_overhead"
)

// Legacy MoE operator names (the older Frontier dialect) and the operators
// they become.
const (
	legacyMoEGating       = "moe_gating"
	legacyMoEExpertPrefix = "moe_expert_"
)

// statCols holds the column indices of one operator's statistics (-1 when
// absent).
type statCols struct {
	op                               string // operator as named in the file
	min, max, mean, median, std, cnt int
}

// header indexes a file's column names.
type header struct {
	names []string
	index map[string]int
}

func newHeader(fields [][]byte) *header {
	h := &header{names: make([]string, len(fields)), index: make(map[string]int, len(fields))}
	for i, f := range fields {
		n := string(trimSpace(f))
		h.names[i] = n
		if _, dup := h.index[n]; !dup {
			h.index[n] = i
		}
	}
	return h
}

// col returns the index of column name, or -1.
func (h *header) col(name string) int {
	if i, ok := h.index[name]; ok {
		return i
	}
	return -1
}

// isIndexColumn reports whether a column is a pandas index written without
// a name ("" or "Unnamed: 0").
func isIndexColumn(name string) bool {
	return name == "" || strings.HasPrefix(name, "Unnamed: ")
}

// timeOps returns the operators of the time_stats.<op>.<stat> columns in
// column order.
func (h *header) timeOps() []string {
	var ops []string
	seen := map[string]bool{}
	for _, n := range h.names {
		rest, ok := strings.CutPrefix(n, "time_stats.")
		if !ok {
			continue
		}
		k := strings.LastIndexByte(rest, '.')
		if k <= 0 {
			continue
		}
		if op := rest[:k]; !seen[op] {
			seen[op] = true
			ops = append(ops, op)
		}
	}
	return ops
}

// stats resolves the statistics columns of op; missing required ones are an
// error naming the column.
func (h *header) stats(op string) (statCols, error) {
	c := statCols{op: op}
	ptrs := []*int{&c.min, &c.max, &c.mean, &c.median, &c.std, &c.cnt}
	for i, s := range profilecsv.StatNames {
		*ptrs[i] = h.col("time_stats." + op + "." + s)
		if *ptrs[i] < 0 && s != "count" {
			return c, fmt.Errorf("missing required column %q", "time_stats."+op+"."+s)
		}
	}
	return c, nil
}

// require returns an error naming the first of cols that the header lacks.
func (h *header) require(cols ...string) error {
	for _, c := range cols {
		if h.col(c) < 0 {
			return fmt.Errorf("missing required column %q", c)
		}
	}
	return nil
}

// detectFamily tells a file's family and dialect from its columns alone.
// It fails on files whose operators belong to no family or to several.
func detectFamily(h *header) (spec.Family, string, error) {
	ops := h.timeOps()
	if len(ops) == 0 {
		for _, c := range profilecsv.HostOps {
			if h.col(c.Stem+"_median") >= 0 || h.col(c.Stem+"_mean") >= 0 {
				return spec.FamilyCPU, dialectCPU, nil
			}
		}
		return "", "", fmt.Errorf("unknown profile family: no time_stats.<op>.<stat> columns and no CPU overhead columns (schedule_median, ...); header starts %s", headStart(h.names))
	}
	fams := map[spec.Family][]string{}
	legacyMoE := false
	for _, op := range ops {
		f := spec.OpFamily(op)
		if op == legacyMoEGating || strings.HasPrefix(op, legacyMoEExpertPrefix) {
			f, legacyMoE = spec.FamilyMoE, true
		}
		fams[f] = append(fams[f], op)
	}
	if len(fams) > 1 {
		var parts []string
		for f, o := range fams {
			parts = append(parts, fmt.Sprintf("%s (%s)", f, strings.Join(o, ", ")))
		}
		sort.Strings(parts)
		return "", "", fmt.Errorf("operators of several families in one file: %s", strings.Join(parts, "; "))
	}
	for f := range fams {
		switch f {
		case spec.FamilyAttention, spec.FamilyMoE:
			if legacyMoE {
				return f, dialectLegacyMoE, nil
			}
			return f, dialectFrontier, nil
		case spec.FamilyCollective:
			return f, dialectVidurNetwork, nil
		case spec.FamilyCPU:
			return "", "", fmt.Errorf("unknown profile family: time_stats columns of CPU operators %v", ops)
		}
	}
	// Every remaining operator is token-wise (linear_op or legacy mlp.csv).
	if h.col(profilecsv.ColNumTokens) < 0 {
		return "", "", fmt.Errorf("unknown profile family: operators %s but no num_tokens column", strings.Join(ops, ", "))
	}
	if h.col(profilecsv.ColMeasurementType) < 0 && h.col(profilecsv.ColModelArch) < 0 && h.col(profilecsv.ColProfilingPrecision) < 0 {
		return spec.FamilyLinear, dialectVidurMLP, nil
	}
	return spec.FamilyLinear, dialectFrontier, nil
}

func headStart(names []string) string {
	if len(names) > 6 {
		return strings.Join(names[:6], ",") + ",..."
	}
	return strings.Join(names, ",")
}

// vidurKernelTimes says why a Vidur mlp.csv is KERNEL_ONLY: Vidur's
// profiler (vidur/profiling/mlp/main.py, --profile_method record_function
// by default) times each operator as the sum of the durations of the CUDA
// kernels launched inside its record_function range
// (vidur/profiling/utils/record_function_tracer.py,
// get_operation_time_stats): kernel times, with no launch gaps, as
// KERNEL_ONLY rows are (microsoft/vidur, commit 6e2138f).
const vidurKernelTimes = ": Vidur's mlp.csv, whose profiler sums the durations of the kernels inside each operator's record_function range (kernel times; --measurement-type CUDA_EVENT says otherwise)"
