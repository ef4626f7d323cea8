package search

import (
	"fmt"
	"math"
)

// grid is the fixed geometric grid of arrival rates a search probes:
// rate(k) = (1+tol)^k requests per second. The result of a candidate is
// the highest grid rate that passes; as long as passing is monotone in the
// rate (a higher rate never passes where a lower one failed), every way of
// searching the grid finds the same rate, so the result does not depend on
// where the search started or on the pruning threshold it was given.
type grid struct{ tol float64 }

// Grid limits: 1e-3 to 1e6 requests per second.
const (
	gridMinRPS = 1e-3
	gridMaxRPS = 1e6
)

func (g grid) rate(k int) float64 { return math.Pow(1+g.tol, float64(k)) }

// ceil is the smallest k with rate(k) >= r (up to rounding).
func (g grid) ceil(r float64) int {
	return int(math.Ceil(math.Log(r)/math.Log1p(g.tol) - 1e-9))
}

// doubling is the number of grid steps that double the rate.
func (g grid) doubling() int { return max(1, int(math.Ceil(math.Ln2/math.Log1p(g.tol)))) }

// rateOutcome is the end of one candidate's rate search.
type rateOutcome struct {
	// best is the index of the highest passing rate (valid when found).
	best  int
	found bool
	// pruned: the probe at index cut failed, so the candidate cannot
	// reach the threshold it was given.
	pruned bool
	cut    int
	// capped: the candidate passed at the grid's highest rate.
	capped bool
	probes map[int]Probe
	// confirms counts the long runs of confirmRate; why is the first
	// one's failure, and unconfirmed says no rate held over a long run.
	confirms    int
	why         string
	unconfirmed bool
	// outside: confirmRate stopped once the candidate's rate could no
	// longer enter the top K: it is below the grid rate bound+1.
	outside bool
	bound   int
}

// searchRate finds the highest passing grid rate of a candidate. minK, when
// set (hasMin), is the lowest index that would beat the pruning threshold:
// it is probed first and, if it fails, the search stops there. Otherwise
// the search starts at startK and doubles or halves the rate until it
// brackets the answer, then bisects the bracket.
//
// probe runs a probe; report says the search may report its failure's
// reason (the lowest grid rate's: nothing on the grid passes), else only
// its verdict counts.
func searchRate(g grid, probe func(rateRPS float64, report bool) (Probe, error), startK, minK int, hasMin bool) (rateOutcome, error) {
	o := rateOutcome{probes: map[int]Probe{}}
	lowK, highK := g.ceil(gridMinRPS), g.ceil(gridMaxRPS)
	at := func(k int) (bool, error) {
		if p, ok := o.probes[k]; ok {
			return p.Pass, nil
		}
		p, err := probe(g.rate(k), k == lowK)
		if err != nil {
			return false, fmt.Errorf("at %.4g req/s: %w", g.rate(k), err)
		}
		o.probes[k] = p
		return p.Pass, nil
	}
	lo, hi := 0, 0 // lo passes, hi fails, once known
	haveLo, haveHi := false, false
	k := min(max(startK, lowK), highK)
	if hasMin {
		k = min(max(minK, lowK), highK)
	}
	pass, err := at(k)
	if err != nil {
		return o, err
	}
	if hasMin && !pass {
		o.pruned, o.cut = true, k
		return o, nil
	}
	if pass {
		lo, haveLo = k, true
	} else {
		hi, haveHi = k, true
	}
	d := g.doubling()
	for !haveLo { // halve until a rate passes
		if hi == lowK {
			return o, nil // nothing on the grid passes
		}
		k = max(hi-d, lowK)
		if pass, err = at(k); err != nil {
			return o, err
		}
		if pass {
			lo, haveLo = k, true
		} else {
			hi = k
		}
	}
	for !haveHi { // double until a rate fails
		if lo == highK {
			o.best, o.found, o.capped = lo, true, true
			return o, nil
		}
		k = min(lo+d, highK)
		if pass, err = at(k); err != nil {
			return o, err
		}
		if pass {
			lo = k
		} else {
			hi, haveHi = k, true
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if pass, err = at(mid); err != nil {
			return o, err
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	o.best, o.found = lo, true
	return o, nil
}
