package search

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/batchjob"
)

// The question's rate of the fixed-rate tests: between the small space's
// one-GPU and two-GPU capacities (about 10 and 23-37 req/s).
const testRateRPS = 20

// The fixed-rate question (--rate) keeps exactly the candidates whose
// exhaustively searched rate is at least the question's, ranks them as an
// exhaustive search does (the optimum equals the exhaustive one's, with
// the same rate), gives each ranked one its margin, and gives every other
// candidate its reason: the rate it misses, or a bound on its rate.
func TestFixedRateQuestion(t *testing.T) {
	_, exhaustive := search(t, smallSettings(t, testSLO, 1000), t.TempDir(), 2)
	rate := map[string]float64{}
	for _, r := range exhaustive.Rows {
		rate[r.ID] = r.RateRPS
	}
	s := smallSettings(t, testSLO, 3)
	s.RateRPS = testRateRPS
	_, rep := search(t, s, t.TempDir(), 2)
	var best *Row
	for _, r := range exhaustive.Ranked {
		if r.RateRPS >= testRateRPS && best == nil {
			best = r
		}
	}
	if best == nil || len(rep.Ranked) != 3 {
		t.Fatalf("exhaustive best at %g req/s %v; fixed-rate search ranked %d", float64(testRateRPS), best, len(rep.Ranked))
	}
	if got := rep.Ranked[0]; got.ID != best.ID || got.RateRPS != best.RateRPS {
		t.Errorf("fixed-rate best %s at %g req/s, exhaustive %s at %g", got.ID, got.RateRPS, best.ID, best.RateRPS)
	}
	rejected := 0
	for _, r := range rep.Rows {
		meets := rate[r.ID] >= testRateRPS
		switch {
		case r.Rank > 0:
			if r.RateRPS != rate[r.ID] || r.RateRPS < testRateRPS {
				t.Errorf("%s ranked at %g req/s, exhaustive %g", r.ID, r.RateRPS, rate[r.ID])
			}
			if want := 100 * (r.RateRPS/testRateRPS - 1); r.MarginPct != want {
				t.Errorf("%s: margin %g%%, want %g%%", r.ID, r.MarginPct, want)
			}
		case r.Status == StatusPruned:
			if !meets || !(r.RateAtMostRPS >= rate[r.ID]) || !strings.HasPrefix(r.Reason, "meets the SLO at 20 req/s over 400 requests; below the top 3") {
				t.Errorf("%s pruned (%s) with rate below %g; exhaustive %g", r.ID, r.Reason, r.RateAtMostRPS, rate[r.ID])
			}
		default:
			rejected++
			if meets || r.AtRate == nil || r.AtRate.Pass || !strings.HasPrefix(r.Reason, "misses the SLO at 20 req/s") {
				t.Errorf("%s %s (%s); exhaustive %g", r.ID, r.Status, r.Reason, rate[r.ID])
			}
		}
		if r.AtRate == nil {
			t.Errorf("%s has no probe at the question's rate", r.ID)
		}
	}
	if rejected == 0 {
		t.Error("no candidate misses the question's rate: the test needs some")
	}
	// results.csv and the table say it for every candidate.
	var b bytes.Buffer
	if err := rep.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, rec := range recs[1:] {
		if rec[col["rate_rps"]] == "" && rec[col["rate_at_most_rps"]] == "" && rec[col["reason"]] == "" {
			t.Errorf("results.csv row %s has no rate, bound or reason", rec[col["id"]])
		}
	}
	b.Reset()
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MARGIN", "ttft_p95_ms@20", "not ranked:", "<= 25.03", "misses the SLO at 20 req/s (tpot_p95_ms", "ranked meeting the SLO at 20 req/s",
		"VS NEXT", "BAND: " + rep.Ranked[0].Band.Describe()} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// Each ranked answer carries its class's error band (TestErrorBand),
	// and is flagged where its margin lies inside it.
	flagged := false
	for i, r := range rep.Ranked {
		if r.Band.Class != "dense, h100, cuda-graph" || !(r.Band.Pct > 0) {
			t.Errorf("%s: band %+v", r.ID, r.Band)
		}
		if r.MarginInBand != (r.MarginPct < r.Band.Pct) {
			t.Errorf("%s: margin %.1f%%, band ±%.1f%%, flagged %v", r.ID, r.MarginPct, r.Band.Pct, r.MarginInBand)
		}
		if i+1 < len(rep.Ranked) {
			next := rep.Ranked[i+1]
			if want := next.GPUs == r.GPUs && r.NextPct < max(r.Band.Pct, next.Band.Pct); r.NextInBand != want {
				t.Errorf("%s: %.1f%% over the next, band ±%.1f%%, flagged %v", r.ID, r.NextPct, r.Band.Pct, r.NextInBand)
			}
		}
		flagged = flagged || r.MarginInBand || r.NextInBand
	}
	if flagged != strings.Contains(b.String(), "!: a margin inside it") {
		t.Errorf("flagged answers %v, but the table says otherwise:\n%s", flagged, b.String())
	}
}

// --seeds: each ranked rate's range over seeds holds its own rate, an
// answer whose margin over the next lies inside the ranges is flagged, and
// the report is the same bytes with any number of workers and when merged
// from shards.
func TestSeedsSpreadDeterministicAndSharded(t *testing.T) {
	s := smallSettings(t, testSLO, 4)
	s.RateRPS, s.Seeds = testRateRPS, 2
	a, b, sharded := t.TempDir(), t.TempDir(), t.TempDir()
	_, rep := search(t, s, a, 1)
	search(t, s, b, 3)
	sameFiles(t, "1 worker against 3", readFiles(t, a), readFiles(t, b))
	for i := range 2 {
		if _, err := Run(context.Background(), s, Options{Dir: sharded, Workers: 2, Shard: batchjob.Shard{Index: i, Count: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	search(t, s, sharded, 2)
	sameFiles(t, "merged shards against one search", readFiles(t, sharded), readFiles(t, a))
	for i, r := range rep.Ranked {
		if len(r.SeedRatesRPS) != 2 || r.SeedRatesRPS[1] == 0 || r.SeedMinRPS > r.RateRPS || r.SeedMaxRPS < r.RateRPS {
			t.Errorf("%s at %g req/s: seeds %v, range %g-%g", r.ID, r.RateRPS, r.SeedRatesRPS, r.SeedMinRPS, r.SeedMaxRPS)
		}
		if i+1 < len(rep.Ranked) {
			next := rep.Ranked[i+1]
			ua, ub := units(r.Candidate, s.Space.Pools), units(next.Candidate, s.Space.Pools)
			if want := r.SeedMinRPS/ua <= next.SeedMaxRPS/ub; r.Close != want {
				t.Errorf("%s: close %v, want %v", r.ID, r.Close, want)
			}
		}
	}
	var tb bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "REQ/S 2 SEEDS") || !strings.Contains(tb.String(), "VS NEXT") {
		t.Errorf("table lacks the seeds' columns:\n%s", tb.String())
	}
}
