package search

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/batchjob"
	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/simulate"
)

// Settings are everything a search's results depend on.
type Settings struct {
	Space Space
	// Base is the simulation every candidate starts from (model, cost
	// model, engine options the search does not vary); its Workload names
	// the requests (trace or workload, number of requests, seed), whose
	// rate the search sets.
	Base runresult.Config
	SLO  SLO
	// RateTolerance is the ratio between neighbouring rates of the grid
	// (0.02: rates 2% apart).
	RateTolerance float64
	// TopK is how many of the best candidates are searched exactly; the
	// others are pruned once they cannot enter the top K.
	TopK int
	// RateRPS, when set, is the question's arrival rate: only candidates
	// that meet the SLO at it (over a probe and over a run ten times as
	// long) are ranked, each with its highest rate (at least RateRPS).
	RateRPS float64
	// Seeds is how many workload seeds (Base's and the next ones) each
	// ranked candidate's rate is searched with, to show its spread (0 or
	// 1: only Base's).
	Seeds int
	// VersionAsync: the user did not choose async scheduling, so each
	// candidate takes Base.VLLMVersion's default for its own layout (vLLM
	// turns it off with pipeline stages).
	VersionAsync bool `json:",omitempty"`
}

// config is candidate c's simulation.
func (s *Settings) config(c Candidate) runresult.Config {
	cfg := c.Config(s.Base)
	if s.VersionAsync {
		_ = cfg.ApplyVLLMDefaults(true, false) // validate checked the version

	}
	return cfg
}

// Options are how a search runs; they do not change its results.
type Options struct {
	// Dir receives DIR/candidates/ID/result.json (and, for a whole search,
	// the report files).
	Dir string
	// Workers run candidates in parallel (0: one per CPU).
	Workers int
	// Shard is the part of the candidates (in enumeration order) this run
	// searches; the zero value is all of them.
	Shard batchjob.Shard
	// Progress, when set, is called after each candidate with the number
	// done and the total of this run.
	Progress func(done, total int)
	// Sim are options passed to every simulation (a loaded bundle).
	Sim simulate.Options
	// enumerationOrder searches the candidates in enumeration order, not
	// shuffled (the tests compare the two).
	enumerationOrder bool
	// fullRuns runs every probe to the end, none stopped once its verdict
	// is sure, and confirms every rate found to the end, also where it can
	// no longer enter the top K (the tests compare the two).
	fullRuns bool
}

// shuffle puts the candidates to search (indices into mine) in a fixed
// pseudo-random order, by a hash of their IDs. Enumeration order groups a
// layout's engine limits and lists the layouts by GPUs per engine, so the
// best ones can all come last; each one found raises the pruning
// threshold only if it beats the K best so far, which in a random order
// of N candidates happens about K (1 + ln(N/K)) times, not N. The results
// do not depend on the order (NewReport).
func shuffle(todo []int, mine []Candidate) {
	key := func(i int) uint64 {
		h := fnv.New64a()
		h.Write([]byte(mine[i].ID()))
		return h.Sum64()
	}
	slices.SortFunc(todo, func(a, b int) int { return cmp.Compare(key(a), key(b)) })
}

// Outcome is what a search run did.
type Outcome struct {
	Candidates int // in this run (the shard)
	Resumed    int // results already in Dir
	Results    []*Result
}

// checksum identifies the settings in every result file.
func (s *Settings) checksum() (string, error) {
	data, err := json.Marshal(struct {
		Model string
		Space Space
		Base  runresult.Config
		SLO   SLO
		Tol   float64
		TopK  int
		Rate  float64 `json:",omitempty"`
		Async bool    `json:",omitempty"`
	}{s.Space.Model.Name, Space{Pools: s.Space.Pools, TP: s.Space.TP, PP: s.Space.PP, EP: s.Space.EP,
		MaxNumSeqs: s.Space.MaxNumSeqs, MaxNumBatchedTokens: s.Space.MaxNumBatchedTokens,
		ExecutionModes: s.Space.ExecutionModes, Modes: s.Space.Modes, UseAll: s.Space.UseAll}, s.Base, s.SLO, s.RateTolerance, s.TopK, s.RateRPS, s.VersionAsync})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}

// units is what a candidate's rate is divided by to rank it: its GPUs, or
// its price per hour when every pool has one.
func units(c Candidate, pools []Pool) float64 {
	for _, p := range pools {
		if p.Device == c.Device && p.CostPerGPUHour > 0 {
			return float64(c.GPUs()) * p.CostPerGPUHour
		}
	}
	return float64(c.GPUs())
}

// Run searches the candidates of the settings (of its shard), resuming
// from the results already in o.Dir, and returns every result of the run.
func Run(ctx context.Context, s Settings, o Options) (*Outcome, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	sum, err := s.checksum()
	if err != nil {
		return nil, err
	}
	all, err := s.Space.Enumerate()
	if err != nil {
		return nil, err
	}
	if o.Sim.RoutingTables == nil { // the candidates' probes share MoE routing tables
		o.Sim.RoutingTables = cost.NewRoutingTables(0)
	}
	sh := o.Shard
	if !sh.Whole() && (sh.Index < 0 || sh.Index >= sh.Count) {
		return nil, fmt.Errorf("search: shard %s: want i/n with 0 <= i < n", sh)
	}
	var mine []Candidate
	for i, c := range all {
		if sh.Owns(i) {
			mine = append(mine, c)
		}
	}
	if sh.Whole() { // another shard may be writing into the folder otherwise
		if err := removeStaleTemps(o.Dir); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
	}
	have, err := readResults(o.Dir, sum)
	if err != nil {
		return nil, err
	}
	wl, err := newWorkload(s.Base.Workload)
	if err != nil {
		return nil, err
	}
	top := &topK{s: &s}
	out := &Outcome{Candidates: len(mine), Results: make([]*Result, len(mine))}
	var todo []int
	for i, c := range mine {
		if r, ok := have[c.ID()]; ok {
			out.Results[i] = r
			out.Resumed++
			if r.Status == StatusOK {
				top.add(rankKey{units(c, s.Space.Pools), r.RateRPS})
			}
			continue
		}
		todo = append(todo, i)
	}
	if !o.enumerationOrder {
		shuffle(todo, mine)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	errs := make(chan error, workers)
	var mu sync.Mutex
	done := out.Resumed
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				r, err := s.evaluate(mine[i], wl, top, o.Sim, o.fullRuns)
				if err == nil {
					r.Settings = sum
					err = writeResult(o.Dir, r)
				}
				if err != nil {
					errs <- fmt.Errorf("search: candidate %s: %w", mine[i].ID(), err)
					cancel()
					return
				}
				mu.Lock()
				out.Results[i] = r
				done++
				if o.Progress != nil {
					o.Progress(done, len(mine))
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, i := range todo {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("search stopped (%w): run the same command again to continue", err)
	}
	return out, nil
}

// confirmRate checks the rate a candidate's probes found with a run of
// longN requests: a short probe misses a slow overload, and the verdict
// must agree with what a longer run of the chosen rate reports. Where the
// long run fails, the highest rate that holds over both runs is found
// below it: steps that double (the first to just below the throughput the
// long run completed, when it ran to the end) until one holds, then
// bisection, so a few long runs suffice.
//
// outside, when not nil, reports whether a rate of at most g.rate(k) can no
// longer enter the top K (the K-th best so far ranks strictly before it;
// it only gets better): the rate this search finds is below the lowest
// index where a run failed, so once no rate below that can enter, the
// search stops there (o.outside), with the ranking it would have had.
func confirmRate(g grid, p *prober, o *rateOutcome, lowK int, outside func(k int) bool) error {
	long := p.wl.longN()
	if long <= p.wl.n {
		return nil // a trace replayed in order has no more requests
	}
	// holds runs the short probe (kept in o.probes) then the long one.
	// Only the first long run's failure is reported (its reason, and the
	// throughput it completed): the others, and the short probes, are
	// verdicts.
	holds := func(k int) (bool, float64, error) {
		short, ok := o.probes[k]
		if !ok {
			var err error
			if short, err = p.verdict(g.rate(k)); err != nil {
				return false, 0, fmt.Errorf("at %.4g req/s: %w", g.rate(k), err)
			}
			o.probes[k] = short
		}
		if !short.Pass {
			return false, 0, nil
		}
		o.confirms++
		pr, err := p.probeN(g.rate(k), long, o.confirms > 1)
		if err != nil {
			return false, 0, fmt.Errorf("at %.4g req/s over %d requests: %w", g.rate(k), long, err)
		}
		if !pr.Pass && o.why == "" {
			o.why = pr.Why
		}
		return pr.Pass, pr.completedRPS, nil
	}
	return confirmSearch(g, o, lowK, holds, outside)
}

// confirmSearch is confirmRate's search over the grid, with holds the test
// of a rate index (the long run's verdict and the throughput it completed).
func confirmSearch(g grid, o *rateOutcome, lowK int, holds func(k int) (bool, float64, error), outside func(k int) bool) error {
	// stop ends the search once its rate, below index hi, cannot enter.
	stop := func(hi int) bool {
		if outside == nil || hi-1 < lowK || !outside(hi-1) {
			return false
		}
		o.found, o.outside, o.bound = false, true, hi-1
		return true
	}
	if stop(o.best + 1) {
		return nil
	}
	ok, done, err := holds(o.best)
	if err != nil || ok {
		return err
	}
	hi, lo, found := o.best, 0, false
	k, step := hi-1, 1
	if done > 0 {
		k = min(k, g.ceil(done)-1)
	}
	for k >= lowK {
		if stop(hi) {
			return nil
		}
		if ok, _, err = holds(k); err != nil {
			return err
		}
		if ok {
			lo, found = k, true
			break
		}
		hi, step = k, 2*step
		k = max(hi-step, lowK-1)
	}
	if !found {
		o.found, o.unconfirmed, o.cut = false, true, o.best
		return nil
	}
	for hi-lo > 1 {
		if stop(hi) {
			return nil
		}
		mid := lo + (hi-lo)/2
		if ok, _, err = holds(mid); err != nil {
			return err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	o.best = lo
	return nil
}

func (s *Settings) validate() error {
	switch {
	case s.Space.Model == nil:
		return fmt.Errorf("search: no model")
	case len(s.SLO) == 0:
		return fmt.Errorf("search: no SLO targets")
	case !(s.RateTolerance > 0 && s.RateTolerance < 1):
		return fmt.Errorf("search: rate tolerance must be in (0, 1), got %g", s.RateTolerance)
	case s.TopK < 1:
		return fmt.Errorf("search: top K must be at least 1, got %d", s.TopK)
	case s.RateRPS < 0 || math.IsNaN(s.RateRPS) || math.IsInf(s.RateRPS, 0):
		return fmt.Errorf("search: the question's rate must be a positive number of requests per second, got %g", s.RateRPS)
	case s.Seeds < 0:
		return fmt.Errorf("search: seeds must be at least 1, got %d", s.Seeds)
	}
	if s.VersionAsync {
		if _, err := runresult.VLLMDefaultsFor(s.Base.VLLMVersion); err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	return nil
}

// evaluate searches one candidate (full: every probe run to the end).
func (s *Settings) evaluate(c Candidate, wl *workload, top *topK, opts simulate.Options, full bool) (*Result, error) {
	r := &Result{ID: c.ID(), Candidate: c, GPUs: c.GPUs()}
	p := &prober{cfg: s.config(c), wl: wl, slo: s.SLO, opts: opts, full: full}
	if err := p.check(); err != nil {
		r.Status, r.Reason = StatusRejected, "simulator: "+err.Error()
		return r, nil
	}
	g := grid{tol: s.RateTolerance}
	u := units(c, s.Space.Pools)
	kth, full := top.kth()
	need, possible := 0.0, true
	if full {
		need, possible = s.needRate(kth, u)
	}
	minK, hasMin := 0, full
	if need > 0 {
		minK = g.ceil(need)
	}
	lowK := g.ceil(gridMinRPS)
	if s.RateRPS > 0 {
		ok, err := s.meetsRate(r, p)
		if err != nil || !ok {
			return r, err
		}
		if !possible {
			r.Status = StatusPruned
			r.Reason = fmt.Sprintf("meets the SLO at %.4g req/s; costs more than the top %d", s.RateRPS, s.TopK)
			return r, nil
		}
		// The rate found is at least the question's: start there.
		lowK, hasMin = g.ceil(s.RateRPS), true
		minK = max(minK, lowK)
	}
	o, err := searchRate(g, p.probeFor, g.ceil(float64(r.GPUs)), minK, hasMin)
	if err == nil && o.found {
		outside := func(k int) bool {
			kth, full := top.kth()
			return full && s.better(kth, rankKey{u, g.rate(k)})
		}
		if p.full {
			outside = nil
		}
		err = confirmRate(g, p, &o, lowK, outside)
	}
	r.Probes += len(o.probes) + o.confirms
	if err != nil {
		return nil, err
	}
	if s.RateRPS > 0 && !o.found && !o.outside && (!o.pruned || o.cut == lowK) {
		// It holds at the question's rate but at no grid rate above it:
		// its rate is the question's, if that enters the top K.
		if full && s.better(kth, rankKey{u, s.RateRPS}) {
			r.Status, r.FailIndex = StatusPruned, lowK
			r.Reason = fmt.Sprintf("meets the SLO at %.4g req/s but not at %.4g; below the top %d", s.RateRPS, g.rate(lowK), s.TopK)
			return r, nil
		}
		if ok, err := s.holdsLong(r, p); err != nil || !ok {
			return r, err
		}
		at := *r.AtRate
		r.Status, r.RateRPS, r.At = StatusOK, s.RateRPS, &at
		r.Reason = fmt.Sprintf("meets the SLO at %.4g req/s, not at %.4g", s.RateRPS, g.rate(lowK))
		top.add(rankKey{u, r.RateRPS})
		return r, nil
	}
	switch {
	case o.outside:
		// Reported as every candidate outside the top K is (NewReport).
		r.Status, r.FailIndex = StatusPruned, o.bound+1
		r.Reason = fmt.Sprintf("no rate above %.4g req/s holds over %d requests: below the top %d", g.rate(o.bound), p.wl.longN(), s.TopK)
	case o.pruned:
		r.Status, r.FailIndex = StatusPruned, o.cut
		r.Reason = fmt.Sprintf("misses the SLO at %.4g req/s (%s), the rate it needs to enter the top %d", g.rate(o.cut), o.probes[o.cut].Why, s.TopK)
	case !o.found && !o.unconfirmed:
		r.Status, r.FailIndex = StatusRejected, lowK
		r.Reason = fmt.Sprintf("misses the SLO even at %.4g req/s (%s)", g.rate(lowK), o.probes[lowK].Why)
	case !o.found:
		r.Status, r.FailIndex = StatusRejected, o.cut
		r.Reason = fmt.Sprintf("passes short probes but no rate holds over %d requests (%s)", p.wl.longN(), o.why)
	default:
		at := o.probes[o.best]
		r.Status, r.RateIndex, r.RateRPS, r.At = StatusOK, o.best, g.rate(o.best), &at
		if o.capped {
			r.Reason = "meets the SLO at the highest rate tried"
		}
		if o.why != "" {
			r.Reason = fmt.Sprintf("lowered to the highest rate that holds over %d requests (%s at the rate short probes passed)", p.wl.longN(), o.why)
		}
		top.add(rankKey{u, r.RateRPS})
	}
	return r, nil
}

// meetsRate asks the fixed-rate question of a candidate: does it meet the
// SLO at s.RateRPS over a probe? A candidate that does not is rejected,
// with the reason and the probe. The run ten times as long that confirms
// it comes later, at the rate found (which implies the question's), or at
// the question's rate where no grid rate above it holds (holdsLong): one
// that cannot enter the top K never pays for it.
func (s *Settings) meetsRate(r *Result, p *prober) (bool, error) {
	at, err := p.probe(s.RateRPS)
	r.Probes++
	if err != nil {
		return false, fmt.Errorf("at %.4g req/s: %w", s.RateRPS, err)
	}
	r.AtRate = &at
	if !at.Pass {
		r.Status, r.FailRPS = StatusRejected, s.RateRPS
		r.Reason = fmt.Sprintf("misses the SLO at %.4g req/s (%s)", s.RateRPS, at.Why)
		return false, nil
	}
	return true, nil
}

// holdsLong confirms the question's rate over a run ten times a probe's;
// a candidate failing it is rejected.
func (s *Settings) holdsLong(r *Result, p *prober) (bool, error) {
	long := p.wl.longN()
	if long <= p.wl.n {
		return true, nil
	}
	pr, err := p.probeN(s.RateRPS, long, false)
	r.Probes++
	if err != nil {
		return false, fmt.Errorf("at %.4g req/s over %d requests: %w", s.RateRPS, long, err)
	}
	if !pr.Pass {
		r.Status, r.FailRPS = StatusRejected, s.RateRPS
		r.Reason = fmt.Sprintf("meets the SLO at %.4g req/s over %d requests, not over %d (%s)", s.RateRPS, p.wl.n, long, pr.Why)
		return false, nil
	}
	return true, nil
}
