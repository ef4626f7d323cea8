package ingest

import (
	"errors"
	"math"
)

// Reading the cells of the current row: a bad key or feature cell excludes
// the row (recorded), and the caller skips it.

// cell returns the bytes of column col of the row (nil when absent).
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

// whole parses a required non-negative whole-number feature cell: a count
// of tokens, sequences or context positions. 1024.0 is read as 1024; 1.5
// excludes the row.
func (r *reader) whole(col int) (float64, bool) {
	v, ok := r.num(col)
	if ok && v != math.Trunc(v) {
		r.drop(col, "", reasonNotWhole+": "+string(trimSpace(r.cell(col))))
		return 0, false
	}
	if ok && v > math.MaxInt32 { // num_tokens=1e20 was ingested as a shape
		r.drop(col, "", reasonBadFeature+": "+string(trimSpace(r.cell(col)))+" is above 2^31-1, more than any batch or context holds")
		return 0, false
	}
	return v, ok
}

// count parses a required positive whole-number feature cell.
func (r *reader) count(col int) (float64, bool) {
	v, ok := r.whole(col)
	if ok && v <= 0 {
		r.drop(col, "", reasonBadFeature+": "+string(trimSpace(r.cell(col)))+" is not positive")
		return 0, false
	}
	return v, ok
}

// optWhole parses an optional whole-number cell: blank or absent gives ok
// with present false.
func (r *reader) optWhole(col int) (v float64, present, ok bool) {
	if col < 0 || len(trimSpace(r.fields[col])) == 0 {
		return 0, false, true
	}
	v, ok = r.whole(col)
	return v, ok, ok
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
	return r.tab.strs[r.cellID(col)]
}

// cellID returns the strTable id of a cell (0 when blank or absent).
func (r *reader) cellID(col int) int32 {
	if col < 0 {
		return 0
	}
	return r.tab.id(trimSpace(r.fields[col]))
}

// condID returns the id of a condition string made of parts.
func (r *reader) condID(parts ...string) int32 {
	r.buf = r.buf[:0]
	for _, p := range parts {
		r.buf = append(r.buf, p...)
	}
	return r.tab.id(r.buf)
}
