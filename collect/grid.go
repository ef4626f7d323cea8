package collect

import (
	"math"
	"sort"
)

// The sampling grids of the planner. Every grid holds both ends of its range
// exactly, so a sweep covers the query domain edge to edge.
//
// TokenGrid (linear ops, MoE token counts, collective sizes) is dense where
// operator cost changes fastest relative to its size: 1, 2, 4, 8, then
// every 16 tokens up to 1024, where GEMMs move from weight-bound to
// compute-bound and tile and wave boundaries fall; beyond 1024 it is
// log-spaced, 8 points per octave rounded to multiples of 64.
//
// LogGrid (the two-dimensional attention grids, host overhead) is
// log-spaced with a given number of points per octave, rounded to multiples
// of 16 from 64 on; attention cost is smooth in context and batch, so a
// coarser grid suffices and keeps the (context, chunk) plane affordable.

const (
	denseTokenStep  = 16
	denseTokenLimit = 1024
	tokenPerOctave  = 8
	tokenAlignLarge = 64
)

// TokenGrid returns the token counts sampled in [lo, hi], ascending.
func TokenGrid(lo, hi int) []int {
	if hi < lo {
		return nil
	}
	set := map[int]bool{lo: true, hi: true}
	for v := 1; v <= 8; v *= 2 {
		set[v] = true
	}
	for v := denseTokenStep; v <= denseTokenLimit; v += denseTokenStep {
		set[v] = true
	}
	for j := 1; ; j++ {
		v := float64(denseTokenLimit) * math.Pow(2, float64(j)/tokenPerOctave)
		if v > float64(hi) {
			break
		}
		set[roundTo(v, tokenAlignLarge)] = true
	}
	return clip(set, lo, hi)
}

// LogGrid returns values in [lo, hi] spaced perOctave per doubling,
// ascending; lo may be 0, which is kept as its own point.
func LogGrid(lo, hi, perOctave int) []int {
	if hi < lo || perOctave < 1 {
		return nil
	}
	set := map[int]bool{lo: true, hi: true}
	for j := 0; ; j++ {
		v := math.Pow(2, float64(j)/float64(perOctave))
		if v > float64(hi) {
			break
		}
		if v >= 64 {
			set[roundTo(v, 16)] = true
		} else {
			set[int(math.Round(v))] = true
		}
	}
	return clip(set, lo, hi)
}

// powersOf returns base^0, base^1, ... up to hi, plus hi.
func powersOf(base, lo, hi int) []int {
	set := map[int]bool{hi: true}
	for v := 1; v <= hi; v *= base {
		set[v] = true
	}
	return clip(set, lo, hi)
}

func roundTo(v float64, align int) int {
	return int(math.Round(v/float64(align))) * align
}

func clip(set map[int]bool, lo, hi int) []int {
	out := make([]int, 0, len(set))
	for v := range set {
		if v >= lo && v <= hi {
			out = append(out, v)
		}
	}
	sort.Ints(out)
	return out
}
