package cost

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// exactAssignments bounds the routed token copies (tokens x top-k) a draw
// makes one token at a time. Larger batches are drawn as a multinomial
// (see expertRouter.draw).
const exactAssignments = 512

// expertRouter draws how many of a batch's tokens each expert of one MoE
// layer receives. Every token picks top-k distinct experts, each pick in
// proportion to the experts' popularity among those not yet picked
// (successive sampling: uniform popularity for uniform routing, Zipf for
// skewed routing, the measured shares for replay), as collect's load
// generator does.
//
// A draw of T tokens makes T x top-k picks one by one when that is at most
// exactAssignments. Beyond, it draws the per-expert counts as a
// multinomial of T x top-k copies over the experts' top-k inclusion
// probabilities (conditional binomials; a binomial of mean 8 or more from
// its normal approximation, rounded), each count capped at T. The
// multinomial lets a token count twice on one expert, which widens the
// spread of a rank's load: for uniform routing by a factor
// sqrt((E-1)/(E-k)), 2.9% for 128 experts and top-8. At the switch (64
// tokens at top-8) the slowest rank of 8 takes about 16% more than its
// even share and the widening moves that by about 0.5% of the load; the
// gap shrinks as 1/sqrt(T) beyond. TestRouterMultinomialMatchesExact
// checks it.
type expertRouter struct {
	experts, topK int
	uniform       bool
	// permute places the popularity ranks on random experts at every draw
	// (skewed routing: which experts are hot, and so which EP rank holds
	// them, differs from layer to layer and step to step): a Fisher-Yates
	// shuffle of perm from the draw's random stream. A routing table
	// restarts perm from the identity (restart), so its draws depend on its
	// own stream alone, not on the tables drawn before it. Without permute
	// popularity rank i is expert i (replay: the histogram's experts).
	permute bool
	alias   aliasTable
	// incl is the top-k inclusion probability of each popularity rank
	// (sums to topK), for the multinomial.
	incl []float64
	// cond holds, for each popularity rank, the conditional binomial the
	// multinomial draws it from (see drawMultinomial), precomputed.
	cond []condBinomial

	memo   *zeroMemo // made on first use
	perm   []int32
	picked []uint64
	chosen []int32
}

// newRouter returns a router over weights, the popularity of each
// popularity rank (nil: uniform). Weights need not be normalised.
func newRouter(experts, topK int, weights []float64, permute bool) (*expertRouter, error) {
	r := &expertRouter{experts: experts, topK: topK, permute: permute,
		perm: make([]int32, experts), picked: make([]uint64, (experts+63)/64), chosen: make([]int32, 0, topK)}
	r.restart()
	if weights == nil {
		r.uniform = true
		r.incl = make([]float64, experts)
		for i := range r.incl {
			r.incl[i] = float64(topK) / float64(experts)
		}
		r.cond = conditionals(r.incl, topK)
		return r, nil
	}
	if len(weights) != experts {
		return nil, fmt.Errorf("router: %d weights for %d experts", len(weights), experts)
	}
	active := 0
	for _, w := range weights {
		if w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, fmt.Errorf("router: expert weight %g is not a non-negative number", w)
		}
		if w > 0 {
			active++
		}
	}
	if active < topK {
		return nil, fmt.Errorf("router: only %d experts have tokens, fewer than top-k %d: every token picks %d distinct experts", active, topK, topK)
	}
	r.alias = newAliasTable(weights)
	r.incl = successiveInclusion(weights, topK)
	r.cond = conditionals(r.incl, topK)
	return r, nil
}

// zipfWeights are the popularities of Zipf exponent s over n ranks.
func zipfWeights(n int, s float64) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Pow(float64(i+1), -s)
	}
	return w
}

// successiveInclusion approximates the probability that each unit is among
// k drawn by successive sampling with weights w. Successive sampling is
// order sampling with exponential ranking variables, whose inclusion
// probabilities are close to 1 - exp(-lambda w_i) with lambda chosen so
// that they add up to k (Rosen, "Asymptotic theory for order sampling",
// 1997).
func successiveInclusion(w []float64, k int) []float64 {
	var sum float64
	for _, x := range w {
		sum += x
	}
	total := func(lambda float64) float64 {
		var t float64
		for _, x := range w {
			t += -math.Expm1(-lambda * x / sum)
		}
		return t
	}
	lo, hi := 0.0, 1.0
	for total(hi) < float64(k) && hi < 1e18 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if total(mid) < float64(k) {
			lo = mid
		} else {
			hi = mid
		}
	}
	out := make([]float64, len(w))
	for i, x := range w {
		out[i] = -math.Expm1(-hi * x / sum)
	}
	return out
}

// drawRNG is the random source of routing draws: a PCG stream, used
// directly for uniform picks, with a rand.Rand over it for normal
// variates.
type drawRNG struct {
	pcg *rand.PCG
	r   *rand.Rand
}

func newDrawRNG(seed, stream uint64) drawRNG {
	p := rand.NewPCG(seed, stream)
	return drawRNG{pcg: p, r: rand.New(p)}
}

// below returns a uniform integer in [0, n) and a uniform fraction in
// [0, 1) from one 64-bit draw (Lemire's multiply-shift on the high half;
// the low half, 32 bits of resolution, for the fraction).
func (g drawRNG) below(n int) (int, float64) {
	u := g.pcg.Uint64()
	hi, _ := bits.Mul64(u, uint64(n))
	return int(hi), float64(uint32(u)) / (1 << 32)
}

// restart sets the permutation back to the identity: the start of every
// routing table's draws. A shuffle makes a uniformly random permutation
// from any start, so restarting changes which experts a draw makes hot but
// not how likely each placement is.
func (r *expertRouter) restart() {
	for i := range r.perm {
		r.perm[i] = int32(i)
	}
}

// draw fills counts (one per expert) with the tokens each expert receives
// from a batch of tokens tokens.
func (r *expertRouter) draw(rng drawRNG, tokens int, counts []int32) {
	clear(counts)
	if r.permute {
		for i := r.experts - 1; i > 0; i-- {
			j, _ := rng.below(i + 1)
			r.perm[i], r.perm[j] = r.perm[j], r.perm[i]
		}
	}
	if tokens*r.topK <= exactAssignments {
		r.drawExact(rng, tokens, counts)
		return
	}
	r.drawMultinomial(rng, tokens, counts)
}

func (r *expertRouter) drawExact(rng drawRNG, tokens int, counts []int32) {
	chosen := r.chosen[:0]
	for range tokens {
		chosen = chosen[:0]
		for len(chosen) < r.topK {
			i, f := rng.below(r.experts)
			e := int32(i)
			if !r.uniform && f >= r.alias.prob[i] {
				e = r.alias.alias[i]
			}
			w, bit := e>>6, uint64(1)<<(e&63)
			if r.picked[w]&bit != 0 {
				continue
			}
			r.picked[w] |= bit
			chosen = append(chosen, e)
		}
		for _, e := range chosen {
			r.picked[e>>6] = 0
			counts[r.perm[e]]++
		}
	}
}

func (r *expertRouter) drawMultinomial(rng drawRNG, tokens int, counts []int32) {
	n := tokens * r.topK
	for i := range r.cond {
		if n == 0 {
			break
		}
		c := n
		if !r.cond[i].last {
			c = r.condDraw(rng.r, i, n)
		}
		c = min(c, tokens)
		counts[r.perm[i]] = int32(c)
		n -= c
	}
}

// condBinomial is the conditional binomial of one popularity rank in the
// multinomial: the share p of the copies left that the rank takes, the
// inclusion probability over what the ranks after it have left (pi/rem,
// computed in rank order as the draw walks them), with the constants of
// binomial's inversion at p. last marks a rank that takes every copy left
// (the last rank, or one whose inclusion reaches what is left).
type condBinomial struct {
	p, log1pNegP, odds float64
	last               bool
}

func conditionals(incl []float64, topK int) []condBinomial {
	out := make([]condBinomial, len(incl))
	rem := float64(topK)
	for i, pi := range incl {
		b := &out[i]
		if i == len(incl)-1 || rem <= pi {
			b.last = true
		} else {
			b.p = pi / rem
			b.log1pNegP = math.Log1p(-b.p)
			b.odds = b.p / (1 - b.p)
		}
		rem -= pi
	}
	return out
}

// condDraw returns binomial(rng, n, p) for rank i's p, drawing the same value
// from the same random numbers.
func (r *expertRouter) condDraw(rng *rand.Rand, i, n int) int {
	b := &r.cond[i]
	p := b.p
	switch {
	case n <= 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	}
	fn := float64(n)
	if p > 0.5 && fn*(1-p) < 8 {
		return n - binomial(rng, n, 1-p)
	}
	mean := fn * p
	if mean >= 8 && fn*(1-p) >= 8 {
		k := mean + math.Sqrt(mean*(1-p))*rng.NormFloat64() + 0.5
		switch {
		case k < 0:
			return 0
		case k > fn:
			return n
		}
		return int(k)
	}
	u := rng.Float64()
	return invertBinomial(u, n, r.zeroProb(i, b, n), b.odds)
}

// zeroMemo caches binomial's probability of a zero count, (1-p)^n, by
// popularity rank and copies left: a multinomial walks the same ranks draw
// after draw with nearby counts. A direct-mapped cache: a slot keeps the
// last (rank, n) stored there; a miss computes the value afresh.
type zeroMemo struct {
	key [zeroMemoSlots]uint32 // rank<<20 | n, plus one (0: empty)
	val [zeroMemoSlots]float64
}

const zeroMemoSlots = 4096

// zeroProb is math.Exp(n * log1p(-p)) of rank i, from the memo when n is
// small enough to key.
func (r *expertRouter) zeroProb(i int, b *condBinomial, n int) float64 {
	if n >= 1<<20 || i >= 1<<11 {
		return math.Exp(float64(n) * b.log1pNegP)
	}
	if r.memo == nil {
		r.memo = new(zeroMemo)
	}
	key := uint32(i)<<20 | uint32(n) + 1
	slot := (uint32(n) ^ uint32(i)<<5) & (zeroMemoSlots - 1)
	if r.memo.key[slot] == key {
		return r.memo.val[slot]
	}
	v := math.Exp(float64(n) * b.log1pNegP)
	r.memo.key[slot], r.memo.val[slot] = key, v
	return v
}

// binomial draws a Binomial(n, p) count: by inversion when the mean (or
// the mean of failures) is under 8, else from the normal approximation,
// rounded and clamped to [0, n].
func binomial(rng *rand.Rand, n int, p float64) int {
	switch {
	case n <= 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	}
	fn := float64(n)
	if p > 0.5 && fn*(1-p) < 8 {
		return n - binomial(rng, n, 1-p)
	}
	mean := fn * p
	if mean >= 8 && fn*(1-p) >= 8 {
		k := mean + math.Sqrt(mean*(1-p))*rng.NormFloat64() + 0.5
		switch {
		case k < 0:
			return 0
		case k > fn:
			return n
		}
		return int(k)
	}
	u := rng.Float64()
	return invertBinomial(u, n, math.Exp(fn*math.Log1p(-p)), p/(1-p))
}

// invertBinomial walks the CDF of Binomial(n, p) from k = 0 to the first
// count whose CDF reaches u; pk is the probability of zero, (1-p)^n, and
// odds p/(1-p).
func invertBinomial(u float64, n int, pk, odds float64) int {
	cdf := pk
	k := 0
	for u > cdf && k < n {
		pk *= float64(n-k) / float64(k+1) * odds
		k++
		cdf += pk
	}
	return k
}

// aliasTable draws index i with probability w_i / sum(w) in constant time
// (Walker's alias method).
type aliasTable struct {
	prob  []float64
	alias []int32
}

func newAliasTable(w []float64) aliasTable {
	n := len(w)
	var sum float64
	for _, x := range w {
		sum += x
	}
	t := aliasTable{prob: make([]float64, n), alias: make([]int32, n)}
	scaled := make([]float64, n)
	var small, large []int32
	for i, x := range w {
		scaled[i] = x / sum * float64(n)
		if scaled[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		t.prob[s], t.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		t.prob[i], t.alias[i] = 1, i
	}
	return t
}
