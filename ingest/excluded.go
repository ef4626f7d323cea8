package ingest

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ftk-dev/ftk/dataset"
)

// Reasons a row or an operator of a row is excluded.
const (
	reasonFieldCount = "wrong number of fields"
	reasonMalformed  = "malformed CSV record"
	reasonNotNumber  = "not a number"
	reasonBlankKey   = "blank key or feature cell"
	reasonNotInteger = "not a positive integer"
	reasonNotWhole   = "not a whole number (a count of tokens, sequences or bytes)"
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

// dropped is one excluded row, or one excluded operator of a row.
type dropped struct {
	line, column int
	name         string // column name
	op, reason   string
}

// describe renders the reason with its column and operator.
func (d dropped) describe() string {
	s := d.reason
	if d.op != "" {
		s = d.op + ": " + s
	}
	if d.name != "" {
		s = fmt.Sprintf("column %q: %s", d.name, s)
	}
	return s
}

// groupDropped groups excluded rows by column, operator and reason, in
// order of their first line.
func groupDropped(ds []dropped) ([]dataset.Excluded, int) {
	type gk struct {
		column   int
		name, op string
		reason   string
	}
	idx := map[gk]int{}
	out := []dataset.Excluded{}
	for _, d := range ds {
		k := gk{d.column, d.name, d.op, d.reason}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, dataset.Excluded{Column: d.column, ColumnName: d.name, Op: d.op, Reason: d.reason})
		}
		out[i].Lines = append(out[i].Lines, d.line)
	}
	return out, len(ds)
}

// firstOf returns the group's first excluded row.
func firstOf(e dataset.Excluded) dropped {
	return dropped{line: e.Lines[0], column: e.Column, name: e.ColumnName, op: e.Op, reason: e.Reason}
}

// firstExcluded returns the excluded row with the lowest line of in.
func firstExcluded(in *dataset.Input) (dropped, bool) {
	if len(in.Excluded) == 0 {
		return dropped{}, false
	}
	best := slices.MinFunc(in.Excluded, func(a, b dataset.Excluded) int { return cmp.Compare(a.Lines[0], b.Lines[0]) })
	return firstOf(best), true
}
