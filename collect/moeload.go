package collect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Load distributions of the MoE router, as the profile formats name them.
// Expert popularity follows a Zipf law over a seeded random order of the
// experts, with exponent 0 (uniform) or 1 (skewed); every token picks top-k
// distinct experts with those weights, so no expert gets more tokens than
// there are in the batch. Extremely skewed is routing collapse: one hot
// expert is in every token's top-k, the other k-1 picks are skewed. It
// gives the largest per-expert load a batch can have (every token), the
// upper edge of the grouped GEMM's max_expert_tokens domain.
const (
	DistUniform         = "uniform"
	DistSkewed          = "skewed"
	DistExtremelySkewed = "extremely_skewed"
)

// LoadDistributions lists the distributions the planner knows, mildest
// first.
var LoadDistributions = []string{DistUniform, DistSkewed, DistExtremelySkewed}

func zipfExponent(dist string) (float64, error) {
	switch dist {
	case DistUniform:
		return 0, nil
	case DistSkewed:
		return 1, nil
	case DistExtremelySkewed:
		return 1, nil
	}
	return 0, fmt.Errorf("unknown load distribution %q (want %s, %s or %s)", dist, DistUniform, DistSkewed, DistExtremelySkewed)
}

// routeTokens draws the router's choices for a batch: each of tokens tokens
// picks topK distinct experts of experts. It returns the tokens per expert.
func routeTokens(tokens, experts, topK int, dist string, seed uint64) ([]int, error) {
	s, err := zipfExponent(dist)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(tokens)<<32|uint64(experts)<<8|uint64(topK)))
	order := rng.Perm(experts)
	cdf := make([]float64, experts)
	var sum float64
	for i := range experts {
		sum += math.Pow(float64(order[i]+1), -s)
		cdf[i] = sum
	}
	counts := make([]int, experts)
	picked := make([]bool, experts)
	chosen := make([]int, 0, topK)
	hot := -1
	if dist == DistExtremelySkewed {
		for i, o := range order {
			if o == 0 {
				hot = i
			}
		}
	}
	for range tokens {
		chosen = chosen[:0]
		if hot >= 0 {
			picked[hot] = true
			chosen = append(chosen, hot)
		}
		for len(chosen) < topK {
			e := sort.SearchFloat64s(cdf, rng.Float64()*sum)
			if e >= experts {
				e = experts - 1
			}
			if picked[e] {
				continue
			}
			picked[e] = true
			chosen = append(chosen, e)
		}
		for _, e := range chosen {
			counts[e]++
			picked[e] = false
		}
	}
	return counts, nil
}

// ExpertLoad is the work of one EP rank's local experts: the tokens routed
// to each. Its statistics are the load columns of the MoE profile format.
type ExpertLoad struct {
	Rank   int   // the EP rank measured (the most loaded)
	Counts []int // tokens per local expert
}

// mostLoadedRank splits per-expert counts over ep ranks (experts
// contiguous per rank, as vLLM places them) and returns the rank that
// routes the most tokens: the one a layer waits for.
func mostLoadedRank(global []int, ep int) ExpertLoad {
	local := len(global) / ep
	best, bestSum := 0, -1
	for r := range ep {
		s := 0
		for _, c := range global[r*local : (r+1)*local] {
			s += c
		}
		if s > bestSum {
			best, bestSum = r, s
		}
	}
	return ExpertLoad{Rank: best, Counts: append([]int(nil), global[best*local:(best+1)*local]...)}
}

// Routed is the total of tokens routed to the local experts.
func (l ExpertLoad) Routed() int {
	s := 0
	for _, c := range l.Counts {
		s += c
	}
	return s
}

// MaxExpert is the tokens of the most loaded local expert.
func (l ExpertLoad) MaxExpert() int {
	m := 0
	for _, c := range l.Counts {
		m = max(m, c)
	}
	return m
}

// LoadStats are the load-shape columns of a MoE row.
type LoadStats struct {
	Routed      int
	AvgPerExp   float64 // tokens_per_expert_avg
	Utilization float64 // share of local experts with at least one token
	MinRatio    float64 // min / avg
	MaxRatio    float64 // max / avg
	CV          float64 // population std / avg
	EntropyBits float64 // Shannon entropy of the token shares, bits
	Gini        float64
}

// Stats computes the load statistics of the local experts.
func (l ExpertLoad) Stats() LoadStats {
	n := len(l.Counts)
	st := LoadStats{Routed: l.Routed()}
	if n == 0 || st.Routed == 0 {
		return st
	}
	avg := float64(st.Routed) / float64(n)
	st.AvgPerExp = avg
	sorted := append([]int(nil), l.Counts...)
	sort.Ints(sorted)
	used, varSum, weighted := 0, 0.0, 0.0
	for i, c := range sorted {
		if c > 0 {
			used++
			p := float64(c) / float64(st.Routed)
			st.EntropyBits -= p * math.Log2(p)
		}
		d := float64(c) - avg
		varSum += d * d
		weighted += float64(i+1) * float64(c)
	}
	st.Utilization = float64(used) / float64(n)
	st.MinRatio = float64(sorted[0]) / avg
	st.MaxRatio = float64(sorted[n-1]) / avg
	st.CV = math.Sqrt(varSum/float64(n)) / avg
	// Gini from the ascending order: (2 sum i x_i)/(n sum x) - (n+1)/n.
	st.Gini = 2*weighted/(float64(n)*float64(st.Routed)) - float64(n+1)/float64(n)
	if st.EntropyBits == 0 {
		st.EntropyBits = 0 // no negative zero in the output
	}
	return st
}
