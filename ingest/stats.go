package ingest

import (
	"errors"
	"math"
)

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
		r.tally(op, " cells of all-zero KERNEL_ONLY time (no GPU kernel launched): kept as 0 ms")
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
	r.rowMs = append(r.rowMs, st.min, st.max)
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
