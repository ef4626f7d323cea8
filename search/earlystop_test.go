package search

import (
	"context"
	"testing"

	"github.com/ftk-dev/ftk/simulate"
)

// INV-15: a verdict (a probe that stops once its queue surely grows) passes
// exactly where the probe run to the end passes, on co-located and
// disaggregated candidates from a fifth of their capacity to four times
// it; and overloaded verdicts do stop early.
func TestVerdictEqualsFullProbe(t *testing.T) {
	s := smallSettings(t, testSLO, 1)
	s.SLO = s.SLO.Scaled(100) // the queue, not a latency target, decides most probes
	all, err := s.Space.Enumerate()
	if err != nil {
		t.Fatal(err)
	}
	wl, err := newWorkload(s.Base.Workload)
	if err != nil {
		t.Fatal(err)
	}
	stopped, failed := 0, 0
	for _, c := range all {
		if c.MaxNumSeqs != 256 || c.MaxNumBatchedTokens != 8192 {
			continue
		}
		p := &prober{cfg: s.config(c), wl: wl, slo: s.SLO}
		for _, rate := range []float64{2, 8, 15, 22, 28, 34, 40, 60, 100} {
			full, err := p.probe(rate)
			if err != nil {
				t.Fatal(err)
			}
			v, err := p.verdict(rate)
			if err != nil {
				t.Fatal(err)
			}
			if v.Pass != full.Pass {
				t.Errorf("INV-15: %s at %g req/s: verdict pass %v (%s), run to the end %v (%s)", c.ID(), rate, v.Pass, v.Why, full.Pass, full.Why)
			}
			if !full.Pass {
				failed++
			}
			if v.Latency == nil && full.Latency != nil {
				stopped++
				if v.Why != "queue grows" {
					t.Errorf("%s at %g req/s: stopped early: %q", c.ID(), rate, v.Why)
				}
			}
		}
	}
	t.Logf("%d failing probes, %d of their verdicts stopped early", failed, stopped)
	if stopped == 0 || failed < 4 {
		t.Errorf("%d failing probes, %d verdicts stopped early: the test compares nothing", failed, stopped)
	}
}

// INV-15: stopping verdicts early, and the confirmation of a rate once it
// can no longer enter the top K, changes only the work: the search's
// files (results.csv, every config.yaml, the plot) are those of a search
// that runs every probe and confirmation to the end, as the rate question
// and the goodput question ask them.
func TestEarlyStopSameResults(t *testing.T) {
	for _, rate := range []float64{0, testRateRPS} {
		s := smallSettings(t, testSLO, 3)
		s.RateRPS = rate
		stopped, full := t.TempDir(), t.TempDir()
		// One worker each: which confirmations stop early, and so how
		// many simulations run, depends on the order candidates finish in
		// (the top K so far); one worker fixes that order, so the count
		// below compares the same evaluations.
		outS, _ := search(t, s, stopped, 1)
		out, err := Run(context.Background(), s, Options{Dir: full, Workers: 1, fullRuns: true})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := NewReport(s, out.Results)
		if err != nil {
			t.Fatal(err)
		}
		if err := rep.WriteFiles(full, simulate.Options{}, 2); err != nil {
			t.Fatal(err)
		}
		// readFiles leaves out result.json, which holds the reason a
		// stopped probe gave (and probe counts).
		a, b := readFiles(t, stopped), readFiles(t, full)
		if a[ResultsFile] == nil {
			t.Fatalf("no %s", ResultsFile)
		}
		t.Logf("rate %g: %d simulations with early stops, %d without", rate, probes(outS), probes(out))
		if probes(outS) >= probes(out) {
			t.Errorf("rate %g: %d simulations with early stops, %d without: the test compares nothing", rate, probes(outS), probes(out))
		}
		sameFiles(t, "INV-15: verdicts stopped early against run to the end", a, b)
	}
}
