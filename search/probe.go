package search

import (
	"errors"
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/runresult"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/simulate"
)

// Probe is one simulation of a candidate at one arrival rate.
type Probe struct {
	RateRPS float64 `json:"rate_rps"`
	// Pass: every request served, the queue bounded
	// (datasets.QueueBounded, the capacity search's definition) and every
	// SLO target met.
	Pass bool `json:"pass"`
	// Why says why a probe failed.
	Why string `json:"why,omitempty"`
	// Latency holds each target's percentile (by Target.Name) of a run
	// that ran to the end; an early-stopped run has none.
	Latency map[string]float64 `json:"latency_ms,omitempty"`
	// OutputTokPerS is the run's output token throughput.
	OutputTokPerS float64 `json:"output_tok_per_s,omitempty"`
	// completedRPS is the run's completed requests per second (0 when
	// stopped early).
	completedRPS float64
}

// workload is the search's arrivals: a parsed workload replayed at any rate
// the way datasets.RunArrivals opens runresult.WorkloadConfig (by
// datasets.PickArrivals), so that a candidate's config.yaml reruns its
// probe exactly.
type workload struct {
	cfg runresult.WorkloadConfig
	w   datasets.Workload
	// meanOutputTokens is the mean output length of the replayed requests.
	meanOutputTokens float64
	n                int
}

func newWorkload(cfg runresult.WorkloadConfig) (*workload, error) {
	name := cfg.Workload
	if cfg.Trace != "" {
		name = "trace:" + cfg.Trace
	}
	w, err := datasets.ParseWorkload(name)
	if err != nil {
		return nil, err
	}
	wl := &workload{cfg: cfg, w: w}
	src, err := wl.source(1)
	if err != nil {
		return nil, err
	}
	var sum float64
	for r, ok := src.Next(); ok; r, ok = src.Next() {
		sum += float64(r.OutputTokens)
		wl.n++
	}
	if wl.n < 8 {
		return nil, fmt.Errorf("workload %s: %d requests; a probe needs at least 8 to tell a bounded queue", name, wl.n)
	}
	wl.meanOutputTokens = sum / float64(wl.n)
	return wl, nil
}

// source is the arrivals at rateRPS (> 0): a trace's recorded arrivals
// scaled to the rate, or Poisson arrivals (datasets.PickArrivals).
func (wl *workload) source(rateRPS float64) (*datasets.Source, error) {
	return wl.sourceN(rateRPS, wl.cfg.NumRequests)
}

// sourceN is source with n requests.
func (wl *workload) sourceN(rateRPS float64, n int) (*datasets.Source, error) {
	a := datasets.PickArrivals(wl.w, datasets.ArrivalChoice{RateRPS: rateRPS, HasRate: true})
	return datasets.NewSource(wl.w, a, n, wl.cfg.Seed)
}

// watch is a datasets.QueueWatch of the arrivals of sourceN(rateRPS, n).
func (wl *workload) watch(rateRPS float64, n int) (*datasets.QueueWatch, error) {
	src, err := wl.sourceN(rateRPS, n)
	if err != nil {
		return nil, err
	}
	arrivalS := make([]float64, 0, src.Len())
	for r, ok := src.Next(); ok; r, ok = src.Next() {
		if r.ID != len(arrivalS) {
			return nil, fmt.Errorf("search probe: request %d comes %d-th; the queue watch needs IDs in arrival order", r.ID, len(arrivalS))
		}
		arrivalS = append(arrivalS, r.ArrivalS)
	}
	if err := src.Err(); err != nil {
		return nil, err
	}
	return datasets.NewQueueWatch(arrivalS)
}

// confirmFactor is how many times a probe's requests the run that confirms
// a candidate's rate has: a probe of 2,000 requests cannot tell a queue
// that grows by a few percent of the arrivals from noise (33 req/s offered,
// 27 completed, passed), a run ten times as long can.
const confirmFactor = 10

// longN is the requests of a confirming run: confirmFactor probes, or as
// many as a trace replayed in order has.
func (wl *workload) longN() int {
	n := confirmFactor * wl.n
	a := datasets.PickArrivals(wl.w, datasets.ArrivalChoice{RateRPS: 1, HasRate: true})
	if wl.w.Kind == datasets.KindTrace || a.Kind == datasets.ArrivalsReplay {
		n = min(n, wl.w.Rows())
	}
	return n
}

// errSLOMissed stops a run once enough requests missed a target that the
// percentile must miss it too.
var errSLOMissed = errors.New("SLO missed")

// errQueueGrows stops a verdict's run once its queue surely grows.
var errQueueGrows = errors.New("queue grows")

// prober simulates one candidate.
type prober struct {
	cfg  runresult.Config
	wl   *workload
	slo  SLO
	opts simulate.Options
	// full runs verdicts to the end too, and confirms every rate found
	// (Options.fullRuns).
	full bool
}

// configAt is the candidate's simulation at rateRPS, as config.yaml holds
// it.
func (p *prober) configAt(rateRPS float64) runresult.Config {
	cfg := p.cfg
	cfg.Workload = p.wl.cfg
	cfg.Workload.RatePerS = rateRPS
	return cfg
}

// check builds the simulation without running it: the simulator's verdict
// on the candidate (layout, memory, what it models).
func (p *prober) check() error {
	_, err := simulate.New(p.configAt(1), p.opts)
	return err
}

// probe runs the candidate at rateRPS to the end (or until a target is
// surely missed): its latencies and reason may be reported.
func (p *prober) probe(rateRPS float64) (Probe, error) {
	return p.probeN(rateRPS, p.wl.cfg.NumRequests, false)
}

// verdict runs the candidate at rateRPS for its verdict alone (Pass): a
// run whose queue surely grows (datasets.QueueWatch) stops there, with Why
// "queue grows" and no latencies, where running it to the end could have
// found another reason to fail first. Pass is the same either way.
func (p *prober) verdict(rateRPS float64) (Probe, error) {
	return p.probeN(rateRPS, p.wl.cfg.NumRequests, true)
}

// probeFor is probe where the search reports the probe's failure (report),
// else verdict.
func (p *prober) probeFor(rateRPS float64, report bool) (Probe, error) {
	if report {
		return p.probe(rateRPS)
	}
	return p.verdict(rateRPS)
}

// probeN runs the candidate at rateRPS on n requests; with stop, only for
// its verdict (see verdict).
func (p *prober) probeN(rateRPS float64, n int, stop bool) (Probe, error) {
	src, err := p.wl.sourceN(rateRPS, n)
	if err != nil {
		return Probe{}, err
	}
	n = src.Len()
	sink := &sloSink{slo: p.slo, arrivalS: make([]float64, n), firstS: make([]float64, n), over: make([]int, len(p.slo)), limit: make([]int, len(p.slo))}
	for i, t := range p.slo {
		sink.limit[i] = t.sureMiss(n)
	}
	opts := p.opts
	opts.Requests = sink
	if stop && !p.full {
		if sink.watch, err = p.wl.watch(rateRPS, n); err != nil {
			return Probe{}, err
		}
		opts.FirstToken = sink.firstToken
	}
	sim, err := simulate.New(p.configAt(rateRPS), opts)
	if err != nil {
		return Probe{}, err
	}
	pr := Probe{RateRPS: rateRPS}
	sum, err := sim.Run(src)
	if errors.Is(err, errSLOMissed) {
		pr.Why = sink.why
		return pr, nil
	}
	if errors.Is(err, errQueueGrows) {
		pr.Why = "queue grows"
		return pr, nil
	}
	if err != nil {
		return Probe{}, err
	}
	m := &sum.Metrics
	pr.OutputTokPerS, pr.completedRPS = m.OutputTokenThroughputPerS, m.RequestThroughputPerS
	pr.Latency = map[string]float64{}
	for _, t := range p.slo {
		pr.Latency[t.Name()] = t.Of(m)
	}
	if m.Rejected > 0 {
		pr.Why = fmt.Sprintf("%d requests longer than max_model_len %d rejected", m.Rejected, sum.Config.Engine.MaxModelLen)
		return pr, nil
	}
	waiting, err := datasets.WaitingAtArrivals(sink.arrivalS, sink.firstS)
	if err != nil {
		return Probe{}, err
	}
	if !datasets.QueueBounded(waiting) {
		pr.Why = "queue grows"
		return pr, nil
	}
	if o := m.Overload; o != nil { // the simulator's own verdict, as simulate prints it
		pr.Why = fmt.Sprintf("overloaded: %.4g req/s offered, %.4g completed, waiting queue grew from %.0f to %.0f", o.OfferedRatePerS, o.CompletedRatePerS, o.WaitingSecondQuarter, o.WaitingLastQuarter)
		return pr, nil
	}
	for _, t := range p.slo {
		if v := t.Of(m); !(v <= t.LimitMs) {
			pr.Why = fmt.Sprintf("%s %.4g > %g", t.Name(), v, t.LimitMs)
			return pr, nil
		}
	}
	pr.Pass = true
	return pr, nil
}

// sloSink watches requests as they finish: it records arrival and first
// token times for the queue test and stops the run once a target is
// surely missed.
type sloSink struct {
	slo              SLO
	arrivalS, firstS []float64
	over, limit      []int
	why              string
	// watch, when set, sees each first token and stops the run once the
	// queue surely grows (a verdict).
	watch *datasets.QueueWatch
}

// firstToken is simulate.Options.FirstToken of a verdict.
func (s *sloSink) firstToken(id int, nowS float64) error {
	if s.watch.Start(id, nowS) {
		return errQueueGrows
	}
	return nil
}

func (s *sloSink) WriteRequest(m *runresult.RequestMetrics) error {
	if m.RequestID < 0 || m.RequestID >= len(s.arrivalS) {
		return fmt.Errorf("search probe: request id %d out of range", m.RequestID)
	}
	if s.watch != nil && m.Status == runresult.StatusRejected {
		s.watch.Refused()
	}
	s.arrivalS[m.RequestID], s.firstS[m.RequestID] = m.ArrivalS, m.FirstTokenS
	for i, t := range s.slo {
		if v := t.perRequest(m); v > t.LimitMs && !math.IsNaN(v) {
			if s.over[i]++; s.over[i] >= s.limit[i] {
				s.why = fmt.Sprintf("%s > %g: %d of %d requests over the limit", t.Name(), t.LimitMs, s.over[i], len(s.arrivalS))
				return errSLOMissed
			}
		}
	}
	return nil
}
