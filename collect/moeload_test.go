package collect

import (
	"math"
	"slices"
	"testing"
)

func TestRouteTokens(t *testing.T) {
	for _, tc := range []struct {
		tokens, experts, topK int
		dist                  string
	}{
		{1, 128, 8, DistUniform}, {8192, 128, 8, DistUniform}, {300, 8, 2, DistSkewed},
		{4096, 16, 2, DistExtremelySkewed}, {64, 8, 8, DistExtremelySkewed},
	} {
		counts, err := routeTokens(tc.tokens, tc.experts, tc.topK, tc.dist, 7)
		if err != nil {
			t.Fatal(err)
		}
		sum, top := 0, 0
		for _, c := range counts {
			if c > tc.tokens {
				t.Errorf("%+v: an expert got %d tokens of %d", tc, c, tc.tokens)
			}
			sum += c
			top = max(top, c)
		}
		if sum != tc.tokens*tc.topK {
			t.Errorf("%+v: %d routes, want tokens x top-k = %d", tc, sum, tc.tokens*tc.topK)
		}
		if tc.dist == DistExtremelySkewed && top != tc.tokens {
			t.Errorf("%+v: hottest expert has %d tokens, want every token (%d)", tc, top, tc.tokens)
		}
		again, _ := routeTokens(tc.tokens, tc.experts, tc.topK, tc.dist, 7)
		if !slices.Equal(counts, again) {
			t.Errorf("%+v: same seed, different routing", tc)
		}
	}
	if _, err := routeTokens(4, 8, 2, "zipfian", 0); err == nil {
		t.Error("unknown distribution accepted")
	}
}

// Skew orders the distributions: the hottest expert's share grows.
func TestRouteTokensSkewOrder(t *testing.T) {
	maxShare := func(dist string) float64 {
		c, err := routeTokens(4096, 64, 4, dist, 1)
		if err != nil {
			t.Fatal(err)
		}
		return float64(slices.Max(c)) / 4096
	}
	u, s, x := maxShare(DistUniform), maxShare(DistSkewed), maxShare(DistExtremelySkewed)
	if !(u < s && s < x) {
		t.Errorf("max expert share uniform %.3f, skewed %.3f, extremely skewed %.3f: want increasing", u, s, x)
	}
}

// The load statistics reproduce Frontier's columns: a row of the H800
// tiny-Qwen file (1 token, 16 local experts, 8 of them get one token) has
// cv 1, entropy 3 bits, Gini 0.5, max ratio 2, min ratio 0, utilization 0.5.
func TestLoadStatsMatchFrontier(t *testing.T) {
	l := ExpertLoad{Counts: []int{1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}}
	st := l.Stats()
	want := LoadStats{Routed: 8, AvgPerExp: 0.5, Utilization: 0.5, MinRatio: 0, MaxRatio: 2, CV: 1, EntropyBits: 3, Gini: 0.5}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"routed", float64(st.Routed), float64(want.Routed)}, {"avg", st.AvgPerExp, want.AvgPerExp},
		{"utilization", st.Utilization, want.Utilization}, {"min ratio", st.MinRatio, want.MinRatio},
		{"max ratio", st.MaxRatio, want.MaxRatio}, {"cv", st.CV, want.CV},
		{"entropy", st.EntropyBits, want.EntropyBits}, {"gini", st.Gini, want.Gini},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	if l.MaxExpert() != 1 || l.Routed() != 8 {
		t.Errorf("max expert %d routed %d", l.MaxExpert(), l.Routed())
	}
}

func TestMostLoadedRank(t *testing.T) {
	l := mostLoadedRank([]int{1, 2, 9, 0, 3, 3}, 3)
	if l.Rank != 1 || !slices.Equal(l.Counts, []int{9, 0}) {
		t.Errorf("most loaded rank = %+v, want rank 1 with [9 0]", l)
	}
}
