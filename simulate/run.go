package simulate

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/spec"
)

// Options are the optional parts of a run.
type Options struct {
	// Predictors replaces the model bundle of Config.Bundle (which New
	// loads when this is nil); with neither, the built-in roofline prices
	// every op.
	Predictors PredictorSet
	// Observer sees every engine step.
	Observer StepObserver
	// Requests receives each request's metrics as it finishes.
	Requests RequestSink
	// Progress, when set, is called every few thousand events with the
	// arrivals so far and the simulated time.
	Progress func(arrived int, nowS float64)
}

// progressEvery is the number of events between Progress calls.
const progressEvery = 1 << 14

// evArrival is the cluster's only event: the next request arrives.
const evArrival = 0

// Simulation is one configured run: replicas of an engine behind a router,
// fed by a Source.
type Simulation struct {
	cfg     Config
	memory  MemoryReport
	cost    *OpCostModel
	opts    Options
	loop    Loop
	engines []*engine
	router  Router
	// outstanding is the requests each replica holds, for the router.
	outstanding []int
	col         *collector

	src          Source
	next         datasets.Request
	prevArrivalS float64
	err          error
	ran          bool
}

// New checks cfg against its model and device and builds the run.
func New(cfg Config, opts Options) (*Simulation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := spec.LookupModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	d, err := spec.LookupDevice(cfg.Device)
	if err != nil {
		return nil, err
	}
	if err := cfg.Layout.Validate(m); err != nil {
		return nil, err
	}
	l := cfg.Layout.Normalize()
	cfg.Layout = l
	if m.IsMoE() && l.DP > 1 {
		return nil, fmt.Errorf("simulate: %s is an MoE model and DP=%d: data-parallel MoE ranks step in lockstep, which the simulator does not model yet", m.Name, l.DP)
	}
	e := &cfg.Engine
	modelMax := m.MaxPosition
	if modelMax <= 0 {
		modelMax = math.MaxInt32
	}
	switch {
	case e.MaxModelLen == 0:
		e.MaxModelLen = min(modelMax, defaultMaxModelLen)
	case e.MaxModelLen > modelMax:
		return nil, fmt.Errorf("simulate: max_model_len %d exceeds the %d positions of %s", e.MaxModelLen, modelMax, m.Name)
	}
	if !e.EnableChunkedPrefill && e.MaxNumBatchedTokens < e.MaxModelLen {
		return nil, fmt.Errorf("simulate: without chunked prefill max_num_batched_tokens (%d) must be at least max_model_len (%d), as vLLM requires", e.MaxNumBatchedTokens, e.MaxModelLen)
	}
	mem, err := planMemory(m, l, d, e)
	if err != nil {
		return nil, err
	}
	if opts.Predictors == nil && cfg.Bundle != "" {
		if opts.Predictors, err = LoadBundle(cfg.Bundle, m, d); err != nil {
			return nil, err
		}
	}
	cost, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: e.EngineLimits,
		Calibration: cfg.Calibration, Predictors: opts.Predictors, BundleName: cfg.Bundle})
	if err != nil {
		return nil, err
	}
	router, err := NewRouter(cfg.Router)
	if err != nil {
		return nil, err
	}
	s := &Simulation{cfg: cfg, memory: mem, cost: cost, opts: opts, router: router,
		outstanding: make([]int, l.DP), col: newCollector(opts.Requests)}
	for i := 0; i < l.DP; i++ {
		replica := i
		sched := newScheduler(cfg.Engine, mem.Blocks, s.col.itl, func(r *reqState, nowS float64) {
			s.col.finish(r, nowS)
			s.outstanding[replica]--
		})
		s.engines = append(s.engines, newEngine(i, &s.loop, cost, sched, l.PP, opts.Observer))
	}
	return s, nil
}

// Config is the run's configuration with defaults resolved.
func (s *Simulation) Config() Config { return s.cfg }

// Handle implements Actor: the arrival of s.next.
func (s *Simulation) Handle(nowS float64, _, _ int) {
	q := &s.next
	if s.col.arrive(q, s.cfg.Engine.MaxModelLen) {
		i := s.router.Pick(s.outstanding)
		s.outstanding[i]++
		s.engines[i].Admit(nowS, q)
	}
	s.scheduleNext()
}

// scheduleNext reads the next arrival and checks it.
func (s *Simulation) scheduleNext() {
	q, ok := s.src.Next()
	if !ok {
		if e, ok := s.src.(interface{ Err() error }); ok {
			s.err = e.Err()
		}
		return
	}
	s.next = q
	switch {
	case !(q.ArrivalS >= 0) || math.IsInf(q.ArrivalS, 0): // NaN too
		s.err = fmt.Errorf("simulate: request %d: arrival %g s is not a non-negative time", q.ID, q.ArrivalS)
	case q.ArrivalS < s.prevArrivalS:
		s.err = fmt.Errorf("simulate: request %d: arrival %g s is before the previous arrival %g s (arrivals must be sorted)", q.ID, q.ArrivalS, s.prevArrivalS)
	case q.PromptTokens < 1:
		s.err = fmt.Errorf("simulate: request %d: %d prompt tokens (need at least 1)", q.ID, q.PromptTokens)
	case q.OutputTokens < 1:
		s.err = fmt.Errorf("simulate: request %d: %d output tokens (need at least 1)", q.ID, q.OutputTokens)
	default:
		s.prevArrivalS = q.ArrivalS
		s.loop.Schedule(q.ArrivalS, PriorityArrival, s, evArrival, 0)
	}
}

// Run replays src to the end and summarises the run. A Simulation runs
// once.
func (s *Simulation) Run(src Source) (*Summary, error) {
	if s.ran {
		return nil, fmt.Errorf("simulate: a Simulation runs once")
	}
	s.ran, s.src = true, src
	s.scheduleNext()
	for s.err == nil && s.col.err == nil && s.loop.Step() {
		if s.opts.Progress != nil && s.loop.Handled()%progressEvery == 0 {
			s.opts.Progress(s.col.arrived, s.loop.Now())
		}
	}
	if s.err == nil {
		s.err = s.col.err
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.opts.Progress != nil {
		s.opts.Progress(s.col.arrived, s.loop.Now())
	}
	for _, e := range s.engines {
		if n := e.sched.outstanding(); n > 0 {
			return nil, fmt.Errorf("simulate: internal error: replica %d ended with %d unfinished requests", e.id, n)
		}
	}
	return s.summary(), nil
}

// summary assembles the run's results.
func (s *Simulation) summary() *Summary {
	sum := &Summary{SchemaVersion: SummarySchemaVersion, Config: s.cfg, CostModel: s.cost.Report(),
		Memory: s.memory, Metrics: s.col.metrics()}
	for _, e := range s.engines {
		r := e.report()
		sum.Replicas = append(sum.Replicas, r)
		sum.Metrics.Steps += r.Steps
		sum.Metrics.Preemptions += r.Preemptions
		sum.Metrics.PeakKVUsage = max(sum.Metrics.PeakKVUsage, r.PeakKVUsage)
	}
	return sum
}
