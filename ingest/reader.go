package ingest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/profilecsv"
	"github.com/ftk-dev/ftk/spec"
)

// colKind is the Arrow type of an extra column.
type colKind int

const (
	kindString colKind = iota
	kindInt
	kindFloat
	kindBool
)

// extraCol is a CSV column kept as it is, under name, in the family's Arrow
// file.
type extraCol struct {
	name, src string
	kind      colKind
}

// reader turns the rows of one file into records.
type reader struct {
	in    *dataset.Input
	index int32 // the input's index in the run
	h     *header
	fam   spec.Family
	tab   *strTable
	// modelFixed: the model came from a flag or ftk-collect.yaml and
	// overrides per-row model names.
	modelFixed bool
	fileModel  int32 // the file's model id before per-row names
	modelID    int32 // the current row's model id
	kernelOnly bool  // the file is KERNEL_ONLY (known from its first labelled row or name)
	extras     []extraCol
	extIdx     []int
	lastExt    []xval            // the previous row's string extras
	xseen      []bool            // extras with a non-blank cell in some row
	used       []bool            // columns the family reads
	skipped    map[[2]string]int // operator, note
	traced     kernelTrace
	dropped    []dropped
	xslab      []xval     // every row's extras, len(extras) each
	recs       [][]record // in chunks, so that growing never copies
	nrecs      int
	buf        []byte // scratch for condition strings
	// kernel_source: its column (-1 when absent), the last cell read and
	// the sources it gave by operator id (a cell of op=name pairs).
	kcol    int
	kcell   string
	kbyOp   map[int32]int32
	kernels map[int32]bool // kernel source ids of the file's samples
	rowMs   []float64      // the current row's timed samples (min, max), for spec.KernelTraced

	// the current row
	fields     [][]byte
	line       int
	rowDropped bool  // the whole row is excluded
	kept       int   // samples emitted for the row
	rowExt     int32 // offset of the row's extras in xslab
}

// use marks columns as read and returns the index of the first (or -1).
func (r *reader) use(names ...string) int {
	first := -1
	for i, n := range names {
		c := r.h.col(n)
		if c >= 0 {
			r.used[c] = true
		}
		if i == 0 {
			first = c
		}
	}
	return first
}

func (r *reader) useStats(c statCols) {
	for _, i := range []int{c.min, c.max, c.mean, c.median, c.std, c.cnt} {
		if i >= 0 {
			r.used[i] = true
		}
	}
}

// drop excludes the row (op == "") or one operator of it.
func (r *reader) drop(col int, op, reason string) {
	d := dropped{line: r.line, op: op, reason: reason}
	if col >= 0 {
		d.column = col + 1
		d.name = r.h.names[col]
	}
	r.dropped = append(r.dropped, d)
	if op == "" {
		r.rowDropped = true
	}
}

// tally counts operator cells handled in a noteworthy way (skipped, or
// kept by a rule); the counts become the input's notes.
func (r *reader) tally(op, what string) {
	if r.skipped == nil {
		r.skipped = map[[2]string]int{}
	}
	r.skipped[[2]string{op, what}]++
}

// readExtras parses the kept extra cells of the row.
func (r *reader) readExtras() bool {
	n := len(r.xslab)
	r.xslab = append(r.xslab, make([]xval, len(r.extras))...) // no allocation: extends and clears
	ext := r.xslab[n:]
	for i, e := range r.extras {
		c := r.extIdx[i]
		if c < 0 {
			continue
		}
		b := trimSpace(r.fields[c])
		if len(b) == 0 {
			continue
		}
		switch e.kind {
		case kindString:
			if l := &r.lastExt[i]; l.ok() && string(b) == r.tab.strs[l.id()] {
				ext[i] = *l // the value of the row before: no hashing
			} else {
				ext[i] = strX(r.tab.id(b))
				*l = ext[i]
			}
		case kindBool:
			v, err := parseBool(b)
			if err != nil {
				r.drop(c, "", reasonNotBool+": "+err.Error())
				r.xslab = r.xslab[:n]
				return false
			}
			ext[i] = numX(0)
			if v {
				ext[i] = numX(1)
			}
		case kindInt, kindFloat:
			v, err := parseFloat(b)
			if err != nil {
				r.drop(c, "", reasonNotNumber+": "+err.Error())
				r.xslab = r.xslab[:n]
				return false
			}
			if e.kind == kindInt && (v != math.Trunc(v) || math.Abs(v) > math.MaxInt32) {
				r.drop(c, "", "not an integer: "+string(b))
				r.xslab = r.xslab[:n]
				return false
			}
			ext[i] = numX(v)
		}
	}
	for i := range ext {
		if ext[i].ok() {
			r.xseen[i] = true
		}
	}
	r.rowExt = int32(n)
	return true
}

// kernelOf returns the kernel source id of operator op on the current row:
// the kernel_source cell's name for it (spec.KernelSourceOf), 0 when the
// file has no such column or the cell names none.
func (r *reader) kernelOf(op int32) int32 {
	if r.kcol < 0 {
		return 0
	}
	cell := trimSpace(r.fields[r.kcol])
	if string(cell) != r.kcell || r.kbyOp == nil {
		r.kcell, r.kbyOp = string(cell), map[int32]int32{}
	}
	id, ok := r.kbyOp[op]
	if !ok {
		id = r.tab.idOf(spec.KernelSourceOf(r.kcell, r.tab.strs[op]))
		r.kbyOp[op] = id
	}
	if id != 0 {
		if r.kernels == nil {
			r.kernels = map[int32]bool{}
		}
		r.kernels[id] = true
	}
	return id
}

// kernelSources lists the distinct kernel sources of the file's samples,
// sorted; nil when none is recorded.
func (r *reader) kernelSources() []string {
	var out []string
	for id := range r.kernels {
		out = append(out, r.tab.strs[id])
	}
	sort.Strings(out)
	return out
}

// rowFunc turns the current row into samples.
type rowFunc func(r *reader)

// readCSV reads one profile file into records. Fatal problems (unreadable
// header, missing required columns, unknown family, mixed measurement
// types) are returned as a *RowError; bad rows are recorded in
// in.Excluded.
func readCSV(in *dataset.Input, index int32, data []byte, org origin, tab *strTable) (*parsed, error) {
	fail := func(line, col int, format string, a ...any) error {
		return &RowError{Path: in.Path, Line: line, Column: col, Msg: fmt.Sprintf(format, a...)}
	}
	sc := newScanner(data)
	hf, hline, err := sc.next()
	if err == io.EOF {
		return nil, fail(0, 0, "empty file: no header line")
	}
	var ce *csvError
	if errors.As(err, &ce) {
		return nil, fail(hline, ce.field, "unreadable header: %s", ce.msg)
	}
	h := newHeader(hf)
	for i, n := range h.names {
		if j := h.index[n]; j != i && !isIndexColumn(n) {
			return nil, fail(hline, i+1, "duplicate column %q (also column %d)", n, j+1)
		}
	}
	fam, dialect, err := detectFamily(h)
	if err != nil {
		return nil, fail(hline, 0, "%v", err)
	}
	in.Family, in.Dialect = string(fam), dialect
	model := tab.idOf(org.model)
	r := &reader{in: in, index: index, h: h, fam: fam, tab: tab, modelFixed: org.modelFixed,
		fileModel: model, modelID: model, used: make([]bool, len(h.names))}
	var fn rowFunc
	switch fam {
	case spec.FamilyLinear:
		fn, err = linearRows(r)
	case spec.FamilyAttention:
		fn, err = attentionRows(r)
	case spec.FamilyMoE:
		fn, err = moeRows(r)
	case spec.FamilyCollective:
		fn, err = collectiveRows(r)
	case spec.FamilyCPU:
		fn, err = cpuRows(r)
	}
	if err != nil {
		return nil, fail(hline, 0, "%s file: %v", fam, err)
	}
	r.extras = familyExtras(fam)
	r.xslab = make([]xval, 0, (bytes.Count(data, nl)+1)*len(r.extras))
	r.extIdx = make([]int, len(r.extras))
	r.lastExt = make([]xval, len(r.extras))
	r.xseen = make([]bool, len(r.extras))
	for i, e := range r.extras {
		r.extIdx[i] = r.use(e.src)
	}
	r.kcol = r.use(profilecsv.ColKernelSource)

	// Measurement type: the measurement_type column, else --measurement-type,
	// else the dialect or file name, else CUDA_EVENT; every row of a file
	// must agree.
	mcol := r.use(profilecsv.ColMeasurementType)
	nameMeas, nameFrom := spec.CUDAEvent, ""
	switch {
	case strings.HasSuffix(strings.ToLower(strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path))), "_kernel_only"):
		nameMeas, nameFrom = spec.KernelOnly, " from the _kernel_only file name"
	case dialect == dialectVidurMLP:
		nameMeas, nameFrom = spec.KernelOnly, vidurKernelTimes
	}
	if fam == spec.FamilyCPU {
		// cpu_overhead_cpu.csv holds host issue costs timed on a CPU.
		nameMeas = spec.HostWall
		if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path))), "_cpu") {
			nameMeas = spec.CPUTime
		}
	} else if org.measurement != "" {
		nameMeas, nameFrom = org.measurement, " (flag --measurement-type)"
	}
	measLine, blankMeas := 0, 0
	rows := newRowSet()
	// A --device or --model flag names what the rows were measured on; a
	// row whose own device or model_name cell says otherwise is refused,
	// not relabelled.
	devCol, modelCol := -1, -1
	if org.deviceFrom == "flag --device" {
		devCol = r.h.col(profilecsv.ColDevice)
	}
	if org.modelFrom == "flag --model" {
		modelCol = r.h.col(profilecsv.ColModelName)
	}
	r.kernelOnly = nameMeas == spec.KernelOnly

	for {
		fields, line, err := sc.next()
		if err == io.EOF {
			break
		}
		in.RowsIn++
		r.line, r.rowDropped, r.kept, r.rowExt = line, false, 0, -1
		if errors.As(err, &ce) {
			if ce.msg == msgUnterminated {
				return nil, fail(line, ce.field, "%s: the quote opened here is never closed, so every line after it is one broken cell; fix or remove the stray quote", ce.msg)
			}
			r.dropped = append(r.dropped, dropped{line: line, column: ce.field, reason: reasonMalformed + ": " + ce.msg})
			continue
		}
		if len(fields) != len(h.names) {
			r.dropped = append(r.dropped, dropped{line: line, column: min(len(fields), len(h.names)) + 1,
				reason: fmt.Sprintf("%s: %d, the header has %d", reasonFieldCount, len(fields), len(h.names))})
			continue
		}
		if !rows.add(fields) {
			in.DuplicateRows++
			if len(in.DuplicateLines) < maxDuplicateLines {
				in.DuplicateLines = append(in.DuplicateLines, line)
			}
			continue
		}
		r.fields = fields
		if mcol >= 0 {
			m := string(trimSpace(fields[mcol]))
			switch {
			case m == "":
				blankMeas++
			case in.Measurement == "":
				if !knownMeasurement(m) {
					return nil, fail(line, mcol+1, "unknown measurement_type %q (want %s or %s)", m, spec.CUDAEvent, spec.KernelOnly)
				}
				if fam == spec.FamilyCPU && m != spec.HostWall && m != spec.CPUTime {
					return nil, fail(line, mcol+1, "measurement_type %q in a CPU overhead file (want %s)", m, spec.HostWall)
				}
				in.Measurement, measLine = m, line
				r.kernelOnly = m == spec.KernelOnly
			case m != in.Measurement:
				return nil, fail(line, mcol+1, "measurement_type %s differs from %s on line %d: a file holds one measurement type (split it)", m, in.Measurement, measLine)
			}
		}
		if devCol >= 0 {
			if d := string(trimSpace(fields[devCol])); d != "" && canonicalDevice(d) != org.device {
				return nil, fail(line, devCol+1, "the row's device is %s, but --device says %s: ingest files of another device on their own (with their --device, or none)", d, org.device)
			}
		}
		if modelCol >= 0 {
			if m := string(trimSpace(fields[modelCol])); m != "" && canonicalModel(m) != org.model {
				return nil, fail(line, modelCol+1, "the row's model_name is %s, but --model says %s: ingest files of another model on their own (with their --model, or none)", m, org.model)
			}
		}
		if !r.readExtras() {
			continue
		}
		r.rowMs = r.rowMs[:0]
		start := r.nrecs
		fn(r)
		r.traceRow(start)
		if r.kept > 0 {
			in.RowsOut++
		}
	}
	if mcol >= 0 && in.Measurement == "" {
		in.Measurement = nameMeas
		in.MeasurementDefaulted = true
		in.MeasurementNote = "measurement_type column is blank on every row: taken as " + nameMeas + nameFrom
	}
	if mcol >= 0 && blankMeas > 0 && !in.MeasurementDefaulted {
		in.Notes = append(in.Notes, fmt.Sprintf("%d rows with a blank measurement_type taken as %s", blankMeas, in.Measurement))
	}
	if mcol < 0 {
		in.Measurement = nameMeas
		if fam != spec.FamilyCPU {
			in.MeasurementDefaulted = true
			in.MeasurementNote = "no measurement_type column (legacy file): taken as " + nameMeas + nameFrom
		}
	}
	if org.measurements != nil && !contains(org.measurements, in.Measurement) {
		return nil, fail(0, 0, "measurement type %s disagrees with %s (measurement: %s)", in.Measurement, org.collectPath, strings.Join(org.measurements, ", "))
	}
	meas := tab.idOf(in.Measurement)
	for _, chunk := range r.recs {
		for i := range chunk {
			chunk[i].meas = meas
		}
	}
	in.Samples = r.nrecs
	in.KernelSources = r.kernelSources()
	in.Excluded, in.ExcludedRows = groupDropped(r.dropped)
	tallies := make([][2]string, 0, len(r.skipped))
	for what := range r.skipped {
		tallies = append(tallies, what)
	}
	slices.SortFunc(tallies, func(a, b [2]string) int { return strings.Compare(a[0]+a[1], b[0]+b[1]) })
	for _, what := range tallies {
		in.Notes = append(in.Notes, fmt.Sprintf("%d %s%s", r.skipped[what], what[0], what[1]))
	}
	if in.Measurement == spec.CUDAEvent {
		r.traced.report(in)
	}
	if in.RowsIn == 0 {
		return nil, fail(hline, 0, "header only, no data rows (an interrupted collect, or an export of an empty table): remove the file or re-run what wrote it")
	}
	if in.DuplicateRows > 0 {
		in.Notes = append(in.Notes, fmt.Sprintf("%d exact duplicate rows dropped (same cells as an earlier row; first at lines %s)", in.DuplicateRows, lineList(in.DuplicateLines, 5)))
	}
	for i, n := range h.names {
		if !r.used[i] && !isIndexColumn(n) {
			in.NotIngested = append(in.NotIngested, n)
		}
	}
	sort.Strings(in.NotIngested)
	return &parsed{recs: r.recs, ext: r.xslab, xseen: r.xseen, family: fam, nExtras: len(r.extras)}, nil
}

// maxDuplicateLines is the most duplicate-row lines an input lists.
const maxDuplicateLines = 20

// parsed is what readCSV returns: the records in chunks and the slab of
// the rows' extras they point into.
type parsed struct {
	recs    [][]record
	ext     []xval
	xseen   []bool // extras with a non-blank cell in some row
	family  spec.Family
	nExtras int
}

func knownMeasurement(m string) bool {
	switch m {
	case spec.CUDAEvent, spec.KernelOnly, spec.CPUTime, spec.HostWall:
		return true
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// familyExtras lists the extra columns of a family's Arrow file: the common
// ones, then the family's own.
func familyExtras(f spec.Family) []extraCol {
	own := map[spec.Family][]extraCol{
		spec.FamilyLinear:     linearExtras,
		spec.FamilyAttention:  attentionExtras,
		spec.FamilyMoE:        moeExtras,
		spec.FamilyCollective: collectiveExtras,
		spec.FamilyCPU:        cpuExtras,
	}[f]
	return append(append([]extraCol(nil), commonExtras...), own...)
}

// commonExtras are kept for every family where the file has them.
var commonExtras = []extraCol{
	{"profiling_backend", profilecsv.ColProfilingBackend, kindString}, // collect's: synthetic or torch
	{"impl", profilecsv.ColImpl, kindString},
	{"shape_id", profilecsv.ColShapeID, kindString},
	{"profiling_precision", profilecsv.ColProfilingPrecision, kindString},
	{"quant_signature", profilecsv.ColQuantSignature, kindString},
	{"model_arch", profilecsv.ColModelArch, kindString},
	{"model_architecture_profile", profilecsv.ColModelArchitectureProfile, kindString},
}

// timeOpStats claims the statistics columns of every time_stats.<op> group
// of the header, with each operator's id, in header order.
func (r *reader) timeOpStats() ([]statCols, []int32, error) {
	var ops []statCols
	var ids []int32
	for _, op := range r.h.timeOps() {
		c, err := r.h.stats(op)
		if err != nil {
			return nil, nil, err
		}
		r.useStats(c)
		ops = append(ops, c)
		ids = append(ids, r.tab.idOf(op))
	}
	return ops, ids, nil
}
