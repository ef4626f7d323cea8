package search

import (
	"cmp"
	"slices"
	"strings"
	"testing"
)

// The fixed-rate question without --use-all is the cheapest deployment for
// a rate: the fewest GPUs that meet the SLO at it, then the highest rate.
// Its ranking equals an exhaustive search's candidates at or above the
// rate sorted that way (IDs and rates), its best uses fewer GPUs than the
// best by rate per GPU, and every deployment left out because it costs
// more says so.
func TestCheapestForRate(t *testing.T) {
	const rateRPS = 5 // under the one-GPU deployments' rates (about 10 req/s)
	_, exhaustive := search(t, smallSettings(t, testSLO, 1000), t.TempDir(), 2)
	var meets []*Row
	for _, r := range exhaustive.Ranked {
		if r.RateRPS >= rateRPS {
			meets = append(meets, r)
		}
	}
	slices.SortStableFunc(meets, func(a, b *Row) int {
		return cmp.Or(cmp.Compare(a.GPUs, b.GPUs), cmp.Compare(b.RateRPS, a.RateRPS), strings.Compare(a.ID, b.ID))
	})
	s := smallSettings(t, testSLO, 3)
	s.RateRPS = rateRPS
	_, rep := search(t, s, t.TempDir(), 2)
	if len(meets) < 4 || len(rep.Ranked) != 3 {
		t.Fatalf("%d candidates meet %d req/s exhaustively; the cheapest search ranked %d", len(meets), rateRPS, len(rep.Ranked))
	}
	for i, r := range rep.Ranked {
		if want := meets[i]; r.ID != want.ID || r.RateRPS != want.RateRPS {
			t.Errorf("rank %d: %s at %g req/s, exhaustive cheapest %s at %g", i+1, r.ID, r.RateRPS, want.ID, want.RateRPS)
		}
	}
	if best, byRate := rep.Ranked[0], exhaustive.Ranked[0]; best.GPUs >= byRate.GPUs {
		t.Errorf("the cheapest %s uses %d GPUs, the best by rate per GPU %s %d: the test compares nothing", best.ID, best.GPUs, byRate.ID, byRate.GPUs)
	}
	costlier := 0
	for _, r := range rep.Rows {
		if r.Rank == 0 && r.GPUs > rep.Ranked[2].GPUs {
			costlier++
			if r.Status == StatusPruned && !strings.Contains(r.Reason, "costs more than the top 3 (1 GPU)") {
				t.Errorf("%s pruned: %s", r.ID, r.Reason)
			}
		}
	}
	if costlier == 0 {
		t.Error("no deployment costs more than the top 3")
	}
}
