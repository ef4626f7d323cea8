package search

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/batchjob"
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
	}{s.Space.Model.Name, Space{Pools: s.Space.Pools, TP: s.Space.TP, PP: s.Space.PP, EP: s.Space.EP,
		MaxNumSeqs: s.Space.MaxNumSeqs, MaxNumBatchedTokens: s.Space.MaxNumBatchedTokens,
		ExecutionModes: s.Space.ExecutionModes, Modes: s.Space.Modes, UseAll: s.Space.UseAll}, s.Base, s.SLO, s.RateTolerance, s.TopK})
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

// topK holds the K best scores seen (rate per unit), for pruning.
type topK struct {
	mu     sync.Mutex
	k      int
	scores []float64 // descending
}

func (t *topK) add(score float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := sort.Search(len(t.scores), func(i int) bool { return t.scores[i] < score })
	t.scores = append(t.scores, 0)
	copy(t.scores[i+1:], t.scores[i:])
	t.scores[i] = score
	if len(t.scores) > t.k {
		t.scores = t.scores[:t.k]
	}
}

// threshold is the K-th best score, or 0 while fewer than K are known.
func (t *topK) threshold() float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.scores) < t.k {
		return 0
	}
	return t.scores[t.k-1]
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
	top := &topK{k: s.TopK}
	out := &Outcome{Candidates: len(mine), Results: make([]*Result, len(mine))}
	var todo []int
	for i, c := range mine {
		if r, ok := have[c.ID()]; ok {
			out.Results[i] = r
			out.Resumed++
			if r.Status == StatusOK {
				top.add(r.RateRPS / units(c, s.Space.Pools))
			}
			continue
		}
		todo = append(todo, i)
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
				r, err := s.evaluate(mine[i], wl, top, o.Sim)
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
// longN requests, and walks down the grid until a rate holds there too: a
// short probe misses a slow overload, and the verdict must agree with
// what a longer run of the chosen rate reports. A failed confirmation
// jumps to just below the throughput that run completed.
func confirmRate(g grid, p *prober, o *rateOutcome) error {
	long := p.wl.longN()
	if long <= p.wl.n {
		return nil // a trace replayed in order has no more requests
	}
	lowK := g.ceil(gridMinRPS)
	for k := o.best; k >= lowK; {
		short, ok := o.probes[k]
		if !ok {
			var err error
			if short, err = p.probe(g.rate(k)); err != nil {
				return fmt.Errorf("at %.4g req/s: %w", g.rate(k), err)
			}
			o.probes[k] = short
		}
		next := k - 1
		if short.Pass {
			o.confirms++
			pr, err := p.probeN(g.rate(k), long)
			if err != nil {
				return fmt.Errorf("at %.4g req/s over %d requests: %w", g.rate(k), long, err)
			}
			if pr.Pass {
				o.best = k
				return nil
			}
			if o.why == "" {
				o.why = pr.Why
			}
			if pr.completedRPS > 0 {
				next = min(next, g.ceil(pr.completedRPS)-1)
			}
		}
		k = next
	}
	o.found, o.unconfirmed, o.cut = false, true, o.best
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
	}
	return nil
}

// evaluate searches one candidate.
func (s *Settings) evaluate(c Candidate, wl *workload, top *topK, opts simulate.Options) (*Result, error) {
	r := &Result{ID: c.ID(), Candidate: c, GPUs: c.GPUs()}
	p := &prober{cfg: c.Config(s.Base), wl: wl, slo: s.SLO, opts: opts}
	if err := p.check(); err != nil {
		r.Status, r.Reason = StatusRejected, "simulator: "+err.Error()
		return r, nil
	}
	g := grid{tol: s.RateTolerance}
	u := units(c, s.Space.Pools)
	th := top.threshold()
	minK := 0
	if th > 0 {
		minK = g.ceil(th * u)
	}
	o, err := searchRate(g, p.probe, g.ceil(float64(r.GPUs)), minK, th > 0)
	if err == nil && o.found {
		err = confirmRate(g, p, &o)
	}
	r.Probes = len(o.probes) + o.confirms
	if err != nil {
		return nil, err
	}
	switch {
	case o.pruned:
		r.Status, r.FailIndex = StatusPruned, o.cut
		r.Reason = fmt.Sprintf("misses the SLO at %.4g req/s (%s), the rate it needs to enter the top %d", g.rate(o.cut), o.probes[o.cut].Why, s.TopK)
	case !o.found && !o.unconfirmed:
		lowK := g.ceil(gridMinRPS)
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
		top.add(r.RateRPS / u)
	}
	return r, nil
}
