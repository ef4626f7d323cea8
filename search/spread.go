package search

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/ftk-dev/ftk/simulate"
)

// spread searches each ranked row's rate again with the next
// Settings.Seeds-1 workload seeds (the same candidate, the same grid, no
// pruning, each rate confirmed by a long run) and sets its range over all
// seeds, its margin over the next rank, and whether that margin lies inside
// the two rows' ranges (Close). With one seed it sets only the margins.
func (rep *Report) spread(opts simulate.Options, workers int) error {
	s := rep.s
	if s.Seeds > 1 {
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		type job struct{ row, seed int }
		var jobs []job
		for i, r := range rep.Ranked {
			r.SeedRatesRPS = make([]float64, s.Seeds)
			r.SeedRatesRPS[0] = r.RateRPS
			for k := 1; k < s.Seeds; k++ {
				jobs = append(jobs, job{i, k})
			}
		}
		errs := make([]error, len(jobs))
		sem := make(chan struct{}, workers)
		var wg sync.WaitGroup
		for j, jb := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				r := rep.Ranked[jb.row]
				rate, err := s.seedRate(r.Candidate, s.Base.Workload.Seed+uint64(jb.seed), r.RateRPS, opts)
				if err != nil {
					errs[j] = fmt.Errorf("search: %s with seed %d: %w", r.ID, s.Base.Workload.Seed+uint64(jb.seed), err)
					return
				}
				r.SeedRatesRPS[jb.seed] = rate
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		for _, r := range rep.Ranked {
			r.SeedMinRPS, r.SeedMaxRPS = r.SeedRatesRPS[0], r.SeedRatesRPS[0]
			for _, v := range r.SeedRatesRPS {
				r.SeedMinRPS, r.SeedMaxRPS = min(r.SeedMinRPS, v), max(r.SeedMaxRPS, v)
			}
		}
	}
	for i := 0; i+1 < len(rep.Ranked); i++ {
		a, b := rep.Ranked[i], rep.Ranked[i+1]
		a.NextPct, a.Close = s.nextMargin(a, b)
		a.NextInBand = s.rateMargin(a, b) && a.NextPct < max(a.Band.Pct, b.Band.Pct)
	}
	return nil
}

// seedRate is a candidate's highest grid rate that holds (a probe and the
// long run that confirms it) with the workload drawn from seed; 0 when
// none does. The search starts at the rate of the first seed, startRPS.
func (s *Settings) seedRate(c Candidate, seed uint64, startRPS float64, opts simulate.Options) (float64, error) {
	wcfg := s.Base.Workload
	wcfg.Seed = seed
	wl, err := newWorkload(wcfg)
	if err != nil {
		return 0, err
	}
	p := &prober{cfg: s.config(c), wl: wl, slo: s.SLO, opts: opts}
	g := grid{tol: s.RateTolerance}
	o, err := searchRate(g, p.probeFor, g.ceil(startRPS), 0, false)
	if err == nil && o.found {
		err = confirmRate(g, p, &o, g.ceil(gridMinRPS), nil)
	}
	if err != nil || !o.found {
		return 0, err
	}
	return g.rate(o.best), nil
}
