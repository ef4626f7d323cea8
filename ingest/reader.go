package ingest

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Reasons a row or an operator of a row is excluded.
const (
	reasonFieldCount = "wrong number of fields"
	reasonMalformed  = "malformed CSV record"
	reasonNotNumber  = "not a number"
	reasonBlankKey   = "blank key or feature cell"
	reasonNotInteger = "not a positive integer"
	reasonNotBool    = "not a boolean"
	reasonNotList    = "not a list of integers"
	reasonNaN        = "NaN or infinite time"
	reasonNegative   = "negative time"
	reasonZero       = "zero time"
	reasonAllZero    = "zero time (every statistic 0: the operator was not timed)"
	reasonMinMedian  = "min > median"
	reasonMedianMax  = "median > max"
	reasonIncomplete = "incomplete statistics (some of min/max/mean/median/std blank)"
	reasonBadStd     = "negative or NaN std"
	reasonBadCount   = "count is not a non-negative integer"
	reasonBadFeature = "feature out of range"
)

// RowError is a fatal problem at a place in an input file. Line and Column
// are 1-based; 0 when not known.
type RowError struct {
	Path         string
	Line, Column int
	Msg          string
}

func (e *RowError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.Path, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}

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

// xval is one extra cell; ok is false for a blank or absent cell. A
// string is held as its id in the run's strTable.
type xval struct {
	ok bool
	id int32
	f  float64
}

// strTable interns the strings of one run: every distinct cell value is
// allocated once, and string extras are kept as ids.
type strTable struct {
	ids  map[string]int32
	strs []string
}

func newStrTable() *strTable { return &strTable{ids: map[string]int32{}} }

// id returns the id of b, adding it if new.
func (t *strTable) id(b []byte) int32 {
	if i, ok := t.ids[string(b)]; ok {
		return i
	}
	s := string(b)
	i := int32(len(t.strs))
	t.ids[s] = i
	t.strs = append(t.strs, s)
	return i
}

// record is a sample with what the Arrow file keeps besides it.
type record struct {
	Sample
	family spec.Family
	phase  string // attention: prefill, decode or mixed
	cond   string // conditions that are not keys but tell duplicates apart
	extras []xval // shared by the samples of one row
}

// stat is one operator's statistics in a row.
type stat struct {
	median, mean, min, max, std float64
	count                       int
}

// reader turns the rows of one file into records.
type reader struct {
	in     *Input
	h      *header
	fam    spec.Family
	device string
	model  string
	// modelFixed: the model came from a flag or ftk-collect.yaml and
	// overrides per-row model names.
	modelFixed bool
	fileModel  string // the file's model before per-row names
	kernelOnly bool   // the file is KERNEL_ONLY (known from its first labelled row or name)
	extras     []extraCol
	extIdx     []int
	used       []bool // columns the family reads

	// the current row
	fields  [][]byte
	line    int
	rowDropped bool // the whole row is excluded
	kept    int  // samples emitted for the row
	rowExt  []xval
	skipped map[string]int
	dropped []dropped
	tab     *strTable
	fslab   []float64         // backing store of the samples' features
	xslab   []xval            // backing store of the rows' extras

	recs  [][]record // in chunks, so that growing never copies
	nrecs int
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

func (r *reader) cell(col int) []byte {
	if col < 0 {
		return nil
	}
	return r.fields[col]
}

// num parses a required numeric key or feature cell; a bad cell excludes
// the row.
func (r *reader) num(col int) (float64, bool) {
	v, err := parseFloat(r.cell(col))
	switch {
	case errors.Is(err, errBlank):
		r.drop(col, "", reasonBlankKey)
		return 0, false
	case err != nil:
		r.drop(col, "", reasonNotNumber+": "+err.Error())
		return 0, false
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		r.drop(col, "", reasonBadFeature+": "+string(trimSpace(r.cell(col))))
		return 0, false
	}
	return v, true
}

// optNum parses an optional numeric cell: blank or absent gives ok with
// present false.
func (r *reader) optNum(col int) (v float64, present, ok bool) {
	if col < 0 || len(trimSpace(r.fields[col])) == 0 {
		return 0, false, true
	}
	v, ok = r.num(col)
	return v, ok, ok
}

// pos parses a required positive numeric feature cell.
func (r *reader) pos(col int) (float64, bool) {
	v, ok := r.num(col)
	if ok && v <= 0 {
		r.drop(col, "", reasonBadFeature+": "+string(trimSpace(r.cell(col)))+" is not positive")
		return 0, false
	}
	return v, ok
}

// posInt parses a required positive integer (TP, EP, group size).
func (r *reader) posInt(col int) (int, bool) {
	v, ok := r.num(col)
	if !ok {
		return 0, false
	}
	if v < 1 || v != math.Trunc(v) || v > 1<<30 {
		r.drop(col, "", reasonNotInteger+": "+string(trimSpace(r.cell(col))))
		return 0, false
	}
	return int(v), true
}

// flag parses an optional boolean cell; blank or absent is false.
func (r *reader) flag(col int) (bool, bool) {
	if col < 0 {
		return false, true
	}
	b, err := parseBool(r.fields[col])
	if errors.Is(err, errBlank) {
		return false, true
	}
	if err != nil {
		r.drop(col, "", reasonNotBool+": "+err.Error())
		return false, false
	}
	return b, true
}

// list parses an optional Python-list cell into dst; blank or absent gives
// an empty list.
func (r *reader) list(col int, dst []int) ([]int, bool) {
	if col < 0 {
		return dst[:0], true
	}
	l, err := parseIntList(r.fields[col], dst)
	if errors.Is(err, errBlank) {
		return l[:0], true
	}
	if err != nil {
		r.drop(col, "", reasonNotList+": "+err.Error())
		return l[:0], false
	}
	for _, v := range l {
		if v < 0 {
			r.drop(col, "", reasonNotList+": negative element")
			return l[:0], false
		}
	}
	return l, true
}

// str returns a string cell ("" when blank or absent).
func (r *reader) str(col int) string {
	if col < 0 {
		return ""
	}
	return r.intern(trimSpace(r.fields[col]))
}

// Outcomes of reading one operator's statistics.
const (
	statAbsent = iota // all cells blank: not measured for this row
	statBad           // malformed or invalid: excluded (recorded)
	statOK
)

// stats reads one operator's statistics. A malformed or invalid group
// excludes the operator for this row.
func (r *reader) stats(c statCols, op string) (stat, int) {
	var st stat
	cols := [5]int{c.median, c.mean, c.min, c.max, c.std}
	var v [5]float64
	blank := 0
	for i, col := range cols {
		if col < 0 {
			v[i] = math.NaN()
			blank++
			continue
		}
		x, err := parseFloat(r.fields[col])
		switch {
		case errors.Is(err, errBlank):
			v[i] = math.NaN()
			blank++
		case err != nil:
			r.drop(col, op, reasonNotNumber+": "+err.Error())
			return st, statBad
		default:
			v[i] = x
		}
	}
	if blank == len(cols) {
		return st, statAbsent
	}
	if c.min < 0 && c.max < 0 && c.std < 0 { // CPU overhead: median and mean only
		blank -= 3
	}
	if blank > 0 {
		r.drop(c.median, op, reasonIncomplete)
		return st, statBad
	}
	st = stat{median: v[0], mean: v[1], min: v[2], max: v[3], std: v[4]}
	if r.kernelOnly && st.median == 0 && st.mean == 0 && st.min == 0 && st.max == 0 {
		// KERNEL_ONLY sums GPU kernel time: all zero means the operator
		// launched no kernel (a view such as a reshape). That is its cost.
		r.tally(op + " cells of all-zero KERNEL_ONLY time (no GPU kernel launched): kept as 0 ms")
		st.count = 0
		if c.cnt >= 0 {
			if n, err := parseFloat(r.fields[c.cnt]); err == nil && n >= 0 && n == math.Trunc(n) {
				st.count = int(n)
			}
		}
		return st, statOK
	}
	if st.median == 0 && st.mean == 0 && st.min == 0 && st.max == 0 {
		r.drop(c.median, op, reasonAllZero)
		return st, statBad
	}
	for i := 0; i < 4; i++ {
		x := v[i]
		if cols[i] < 0 {
			continue
		}
		switch {
		case math.IsNaN(x) || math.IsInf(x, 0):
			r.drop(cols[i], op, reasonNaN)
			return st, statBad
		case x < 0:
			r.drop(cols[i], op, reasonNegative)
			return st, statBad
		case x == 0:
			r.drop(cols[i], op, reasonZero)
			return st, statBad
		}
	}
	if c.std >= 0 && (math.IsNaN(st.std) || math.IsInf(st.std, 0) || st.std < 0) {
		r.drop(c.std, op, reasonBadStd)
		return st, statBad
	}
	if c.min >= 0 && st.min > st.median {
		r.drop(c.min, op, reasonMinMedian)
		return st, statBad
	}
	if c.max >= 0 && st.median > st.max {
		r.drop(c.max, op, reasonMedianMax)
		return st, statBad
	}
	if c.cnt >= 0 {
		n, err := parseFloat(r.fields[c.cnt])
		switch {
		case errors.Is(err, errBlank):
		case err != nil || n < 0 || n != math.Trunc(n) || n > math.MaxInt32:
			r.drop(c.cnt, op, reasonBadCount)
			return st, statBad
		default:
			st.count = int(n)
		}
	}
	return st, statOK
}

// sumStats adds up the statistics of several legacy columns that make one
// operator: medians, means, mins and maxes add, stds add in quadrature.
// All parts must be measured.
func (r *reader) sumStats(cols []statCols, op string) (stat, int) {
	var sum stat
	var vr float64
	absent := 0
	for _, c := range cols {
		s, res := r.stats(c, op)
		switch res {
		case statBad:
			return sum, statBad
		case statAbsent:
			absent++
			continue
		}
		sum.median += s.median
		sum.mean += s.mean
		sum.min += s.min
		sum.max += s.max
		vr += s.std * s.std
		sum.count = s.count
	}
	switch absent {
	case 0:
		sum.std = math.Sqrt(vr)
		return sum, statOK
	case len(cols):
		return sum, statAbsent
	}
	r.drop(cols[0].median, op, reasonIncomplete+": some of the legacy parts are blank")
	return sum, statBad
}

// tally counts operator cells handled in a noteworthy way (skipped, or
// kept by a rule); the counts become the input's notes.
func (r *reader) tally(what string) {
	if r.skipped == nil {
		r.skipped = map[string]int{}
	}
	r.skipped[what]++
}

// readExtras parses the kept extra cells of the row.
func (r *reader) readExtras() bool {
	if len(r.xslab)+len(r.extras) > cap(r.xslab) {
		r.xslab = make([]xval, 0, 64*len(r.extras)+64)
	}
	n := len(r.xslab)
	r.xslab = r.xslab[:n+len(r.extras)]
	ext := r.xslab[n : n+len(r.extras) : n+len(r.extras)]
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
			ext[i] = xval{ok: true, id: r.tab.id(b)}
		case kindBool:
			v, err := parseBool(b)
			if err != nil {
				r.drop(c, "", reasonNotBool+": "+err.Error())
				return false
			}
			ext[i] = xval{ok: true}
			if v {
				ext[i].f = 1
			}
		case kindInt, kindFloat:
			v, err := parseFloat(b)
			if err != nil {
				r.drop(c, "", reasonNotNumber+": "+err.Error())
				return false
			}
			if e.kind == kindInt && (v != math.Trunc(v) || math.Abs(v) > math.MaxInt32) {
				r.drop(c, "", "not an integer: "+string(b))
				return false
			}
			ext[i] = xval{ok: true, f: v}
		}
	}
	r.rowExt = ext
	return true
}

// emit adds a sample of the current row.
func (r *reader) emit(key spec.OpKey, feats []float64, st stat, variant, phase, cond string) {
	key.Measurement = r.in.Measurement
	for _, f := range feats {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			r.drop(-1, key.Op, reasonBadFeature)
			return
		}
	}
	model := r.model
	if r.fam == spec.FamilyCollective {
		model = ""
	}
	if len(r.fslab)+len(feats) > cap(r.fslab) {
		r.fslab = make([]float64, 0, 4096)
	}
	n := len(r.fslab)
	r.fslab = append(r.fslab, feats...)
	if len(r.recs) == 0 || len(r.recs[len(r.recs)-1]) == cap(r.recs[len(r.recs)-1]) {
		r.recs = append(r.recs, make([]record, 0, 1024))
	}
	last := &r.recs[len(r.recs)-1]
	r.nrecs++
	*last = append(*last, record{
		Sample: Sample{
			Key: key, Features: r.fslab[n:len(r.fslab):len(r.fslab)],
			MedianMs: st.median, MeanMs: st.mean, MinMs: st.min, MaxMs: st.max, StdMs: st.std,
			Count: st.count, Device: r.device, Model: model,
			Source: r.in.Path, Line: r.line, Variant: variant,
		},
		family: r.fam, phase: phase, cond: cond, extras: r.rowExt,
	})
	r.kept++
}

// intern returns b as a string, allocating each distinct value once per
// run.
func (r *reader) intern(b []byte) string { return r.tab.strs[r.tab.id(b)] }

// rowFunc turns the current row into samples.
type rowFunc func(r *reader)

// readCSV reads one profile file into records. Fatal problems (unreadable
// header, missing required columns, unknown family, mixed measurement
// types) are returned as a *RowError; bad rows are recorded in
// in.Excluded.
func readCSV(in *Input, data []byte, org origin, tab *strTable) ([][]record, error) {
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
	r := &reader{in: in, h: h, fam: fam, device: org.device, model: org.model, modelFixed: org.modelFixed, fileModel: org.model, used: make([]bool, len(h.names)),
		tab: tab}
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
	r.extIdx = make([]int, len(r.extras))
	for i, e := range r.extras {
		r.extIdx[i] = r.use(e.src)
	}

	// Measurement type: the measurement_type column, else the file name,
	// else CUDA_EVENT; every row of a file must agree.
	mcol := r.use("measurement_type")
	nameMeas := spec.CUDAEvent
	if strings.HasSuffix(strings.ToLower(strings.TrimSuffix(filepath.Base(in.Path), filepath.Ext(in.Path))), "_kernel_only") {
		nameMeas = spec.KernelOnly
	}
	if fam == spec.FamilyCPU {
		nameMeas = spec.HostWall
	}
	measLine, blankMeas := 0, 0
	r.kernelOnly = nameMeas == spec.KernelOnly

	for {
		fields, line, err := sc.next()
		if err == io.EOF {
			break
		}
		in.RowsIn++
		r.line, r.rowDropped, r.kept, r.rowExt = line, false, 0, nil
		if errors.As(err, &ce) {
			r.dropped = append(r.dropped, dropped{line: line, column: ce.field, reason: reasonMalformed + ": " + ce.msg})
			continue
		}
		if len(fields) != len(h.names) {
			r.dropped = append(r.dropped, dropped{line: line, column: min(len(fields), len(h.names)) + 1,
				reason: fmt.Sprintf("%s: %d, the header has %d", reasonFieldCount, len(fields), len(h.names))})
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
				if fam == spec.FamilyCPU && m != spec.HostWall {
					return nil, fail(line, mcol+1, "measurement_type %q in a CPU overhead file (want %s)", m, spec.HostWall)
				}
				in.Measurement, measLine = m, line
				r.kernelOnly = m == spec.KernelOnly
			case m != in.Measurement:
				return nil, fail(line, mcol+1, "measurement_type %s differs from %s on line %d: a file holds one measurement type (split it)", m, in.Measurement, measLine)
			}
		}
		if !r.readExtras() {
			continue
		}
		fn(r)
		if r.kept > 0 {
			in.RowsOut++
		}
	}
	if mcol >= 0 && in.Measurement == "" {
		in.Measurement = nameMeas
		in.MeasurementDefaulted = true
		in.MeasurementNote = "measurement_type column is blank on every row: taken as " + nameMeas + " from the file name"
	}
	if mcol >= 0 && blankMeas > 0 && !in.MeasurementDefaulted {
		in.Notes = append(in.Notes, fmt.Sprintf("%d rows with a blank measurement_type taken as %s", blankMeas, in.Measurement))
	}
	if mcol < 0 {
		in.Measurement = nameMeas
		if fam != spec.FamilyCPU {
			in.MeasurementDefaulted = true
			in.MeasurementNote = "no measurement_type column (legacy file): taken as " + nameMeas
			if nameMeas == spec.KernelOnly {
				in.MeasurementNote += " from the _kernel_only file name"
			}
		}
	}
	if org.measurements != nil && !contains(org.measurements, in.Measurement) {
		return nil, fail(0, 0, "measurement type %s disagrees with %s (measurement: %s)", in.Measurement, org.collectPath, strings.Join(org.measurements, ", "))
	}
	for _, chunk := range r.recs {
		for i := range chunk {
			chunk[i].Key.Measurement = in.Measurement
		}
	}
	in.Samples = r.nrecs
	in.Excluded, in.ExcludedRows = groupDropped(r.dropped)
	skips := make([]string, 0, len(r.skipped))
	for what, n := range r.skipped {
		skips = append(skips, fmt.Sprintf("%d %s", n, what))
	}
	sort.Strings(skips)
	in.Notes = append(in.Notes, skips...)
	if in.RowsIn == 0 {
		in.Notes = append(in.Notes, "no data rows (header only)")
	}
	for i, n := range h.names {
		if !r.used[i] && !isIndexColumn(n) {
			in.NotIngested = append(in.NotIngested, n)
		}
	}
	sort.Strings(in.NotIngested)
	return r.recs, nil
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
	{"profiling_precision", "profiling_precision", kindString},
	{"quant_signature", "quant_signature", kindString},
	{"model_arch", "model_arch", kindString},
	{"model_architecture_profile", "model_architecture_profile", kindString},
}
