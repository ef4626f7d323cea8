package search

import (
	"fmt"
	"sort"
	"sync"
)

// rankKey is what a candidate is ranked by: its rate and its units (GPUs,
// or price per hour when every pool has one; see units).
type rankKey struct{ units, rate float64 }

// cheapest reports whether the search asks the fixed-rate question
// (--rate): then the deployments meeting the rate rank by cost, fewest
// units first, and by rate among those of equal cost; otherwise by rate
// per unit (goodput per GPU, or per price).
func (s *Settings) cheapest() bool { return s.RateRPS > 0 }

// better reports whether a ranks strictly before b.
func (s *Settings) better(a, b rankKey) bool {
	if s.cheapest() {
		if a.units != b.units {
			return a.units < b.units
		}
		return a.rate > b.rate
	}
	return a.rate/a.units > b.rate/b.units
}

// needRate is the lowest rate at which a candidate of u units ranks no
// worse than kth; possible is false when no rate does (it costs more).
func (s *Settings) needRate(kth rankKey, u float64) (rate float64, possible bool) {
	if !s.cheapest() {
		return kth.rate / kth.units * u, true
	}
	switch {
	case u > kth.units:
		return 0, false
	case u < kth.units:
		return 0, true
	}
	return kth.rate, true
}

// topK holds the K best keys seen, for pruning.
type topK struct {
	s    *Settings
	mu   sync.Mutex
	keys []rankKey // best first
}

func (t *topK) add(k rankKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.keys), func(i int) bool { return t.s.better(k, t.keys[i]) })
	t.keys = append(t.keys, rankKey{})
	copy(t.keys[i+1:], t.keys[i:])
	t.keys[i] = k
	if len(t.keys) > t.s.TopK {
		t.keys = t.keys[:t.s.TopK]
	}
}

// kth is the K-th best key; full is false while fewer than K are known.
func (t *topK) kth() (key rankKey, full bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.keys) < t.s.TopK {
		return rankKey{}, false
	}
	return t.keys[t.s.TopK-1], true
}

// unitsText says u units in words: GPUs, or a price per hour.
func (s *Settings) unitsText(u float64) string {
	if s.pricesGiven() {
		return fmt.Sprintf("%.4g per hour", u)
	}
	if u == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%.0f GPUs", u)
}

// nextMargin is how far ranked row a lies ahead of the next one, b, in
// percent: its rate per unit over b's, or, when the fixed-rate question
// ranks by cost, b's cost over a's (equal costs: a's rate over b's).
// close says the margin is inside the two rows' rate ranges over seeds
// (never for two costs: a price is not noisy).
func (s *Settings) nextMargin(a, b *Row) (pct float64, close bool) {
	ua, ub := units(a.Candidate, s.Space.Pools), units(b.Candidate, s.Space.Pools)
	if !s.rateMargin(a, b) {
		return 100 * (ub/ua - 1), false
	}
	return 100 * (a.RateRPS/ua/(b.RateRPS/ub) - 1), s.Seeds > 1 && a.SeedMinRPS/ua <= b.SeedMaxRPS/ub
}

// rateMargin reports whether ranked rows a and b are ordered by their
// rates (per unit), not by their costs.
func (s *Settings) rateMargin(a, b *Row) bool {
	return !s.cheapest() || units(a.Candidate, s.Space.Pools) == units(b.Candidate, s.Space.Pools)
}
