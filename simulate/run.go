package simulate

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Options are the optional parts of a run.
type Options struct {
	// Predictors replaces the model bundle of Config.Bundle (which New
	// loads when this is nil); with neither, the built-in roofline prices
	// every op.
	Predictors cost.PredictorSet
	// HostPredictors replaces the host bundle of Config.HostBundle: HOST_WALL
	// predictors of the host-side step parts.
	HostPredictors cost.PredictorSet
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
// or prefill and decode instances (disaggregated), fed by a Source.
type Simulation struct {
	cfg    runresult.Config
	memory runresult.MemoryReport
	cost   *cost.OpCostModel
	// decodeMemory and decodeCost are the decode instances' (disaggregated
	// runs).
	decodeMemory *runresult.MemoryReport
	decodeCost   *cost.OpCostModel
	opts         Options
	loop         Loop
	// engines are every engine: the replicas, or the prefill instances
	// then the decode instances. The first entry of them receive arrivals.
	engines []*engine
	entry   int
	router  Router
	// outstanding is the requests each arrival engine holds, for the
	// router.
	outstanding []int
	// balance picks the DP rank of a data-parallel MoE run as vLLM's front
	// end does (least-loaded router); nil: router.
	balance *dpBalancer
	col     *collector
	disagg  *disaggregation

	src Source
	// fb is src when it reacts to completions (closed loop).
	fb FeedbackSource
	// arrivals holds the requests whose arrival events are pending (one
	// for an open-loop source; up to the number of clients for a closed
	// loop); freeArrivals are its unused slots.
	arrivals     []spec.Request
	freeArrivals []int32
	prevArrivalS float64
	err          error
	ran          bool
}

// role is one kind of engine of a run: its layout, memory plan and cost
// model.
type role struct {
	layout spec.Layout
	memory runresult.MemoryReport
	cost   *cost.OpCostModel
}

// New checks cfg against its model and device and builds the run.
func New(cfg runresult.Config, opts Options) (*Simulation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := spec.LookupModel(cfg.Model)
	if err != nil {
		return nil, err
	}
	if m, err = m.WithKVCacheDtype(cfg.Engine.KVCacheDtype); err != nil {
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
	if cfg.Mode == "" {
		cfg.Mode = runresult.ModeColocated
	}
	e := &cfg.Engine
	modelMax := m.MaxPosition
	if modelMax <= 0 {
		modelMax = math.MaxInt32
	}
	switch {
	case e.MaxModelLen == 0:
		e.MaxModelLen = spec.ResolveMaxModelLen(m, 0)
	case e.MaxModelLen > modelMax:
		return nil, fmt.Errorf("simulate: max_model_len %d exceeds the %d positions of %s", e.MaxModelLen, modelMax, m.Name)
	}
	if !e.EnableChunkedPrefill && e.MaxNumBatchedTokens < e.MaxModelLen {
		return nil, fmt.Errorf("simulate: without chunked prefill max_num_batched_tokens (%d) must be at least max_model_len (%d), as vLLM requires", e.MaxNumBatchedTokens, e.MaxModelLen)
	}
	if opts.Predictors == nil && cfg.Bundle != "" {
		if opts.Predictors, err = cost.LoadBundle(cfg.Bundle, m, d); err != nil {
			return nil, err
		}
	}
	if opts.HostPredictors == nil && cfg.HostBundle != "" {
		if opts.HostPredictors, err = cost.LoadHostBundle(cfg.HostBundle, m, d); err != nil {
			return nil, err
		}
	}
	cfg.MoE.Resolve()
	var hist *cost.ExpertHistogram
	if m.IsMoE() && cfg.MoE.Routing == cost.RoutingReplay {
		if hist, err = cost.ReadExpertHistogram(cfg.MoE.Histogram, m.NumExperts); err != nil {
			return nil, err
		}
	}
	newRole := func(l spec.Layout) (*role, error) {
		l = l.Normalize()
		if err := l.Validate(m); err != nil {
			return nil, err
		}
		if l.DP > 1 && !m.IsMoE() {
			return nil, fmt.Errorf("simulate: layout %s: an instance has DP=1; give the number of instances instead (--prefill-instances, --decode-instances)", l)
		}
		mem, err := planMemory(m, l, d, e)
		if err != nil {
			return nil, err
		}
		cost, err := cost.NewOpCostModel(cost.OpCostConfig{Model: m, Layout: l, Device: d, Limits: e.EngineLimits,
			Calibration: cfg.Calibration, Predictors: opts.Predictors, BundleName: cfg.Bundle,
			HostPredictors: opts.HostPredictors, ExecutionMode: e.ExecutionMode, MaxCaptureSize: cost.MaxCaptureSize(e.MaxCUDAGraphCaptureSize, e.EngineLimits),
			MoE: cfg.MoE, Histogram: hist})
		if err != nil {
			return nil, err
		}
		return &role{layout: l, memory: mem, cost: cost}, nil
	}
	router, err := NewRouter(cfg.Router)
	if err != nil {
		return nil, err
	}
	s := &Simulation{opts: opts, router: router, col: newCollector(opts.Requests)}
	if cfg.Mode == runresult.ModeDisaggregated {
		if l.DP > 1 {
			return nil, fmt.Errorf("simulate: disaggregated mode with DP=%d: give the instance counts instead (--prefill-instances, --decode-instances)", l.DP)
		}
		dc := &cfg.Disaggregation
		dc.Resolve(l)
		pre, err := newRole(dc.PrefillLayout)
		if err != nil {
			return nil, fmt.Errorf("prefill instances: %w", err)
		}
		dec, err := newRole(dc.DecodeLayout)
		if err != nil {
			return nil, fmt.Errorf("decode instances: %w", err)
		}
		e.ExecutionMode = pre.cost.ExecutionMode()
		s.cfg, s.memory, s.cost, s.decodeMemory, s.decodeCost = cfg, pre.memory, pre.cost, &dec.memory, dec.cost
		var prefill, decode []*engine
		for i := 0; i < dc.PrefillInstances; i++ {
			sched := newScheduler(cfg.Engine, pre.memory.Blocks, s.col.itl, nil)
			prefill = append(prefill, newEngine(i, RolePrefill, &s.loop, pre.cost, sched, pre.layout.PP, e.AsyncScheduling, opts.Observer))
		}
		decodeRouter, _ := NewRouter(cfg.Router)
		// Prefix caching runs on the prefill instances; a decode instance
		// receives every request's whole prompt KV cache into blocks
		// reserved for it, so it only counts blocks.
		decodeEngine := cfg.Engine
		decodeEngine.EnablePrefixCaching = false
		for j := 0; j < dc.DecodeInstances; j++ {
			sched := newScheduler(decodeEngine, dec.memory.Blocks, s.col.itl, nil)
			decode = append(decode, newEngine(dc.PrefillInstances+j, RoleDecode, &s.loop, dec.cost, sched, dec.layout.PP, e.AsyncScheduling, opts.Observer))
		}
		s.disagg = newDisaggregation(m, dc, s.col, decodeRouter, &s.loop, prefill, decode)
		for j, en := range decode {
			dst := j
			en.sched.done = func(r *reqState, nowS float64) {
				s.disagg.finished(dst, r, nowS)
				s.completed(r.id, nowS)
			}
		}
		for i, en := range prefill {
			src, inner := i, en.sched.done
			en.sched.done = func(r *reqState, nowS float64) {
				s.outstanding[src]--
				inner(r, nowS)
			}
		}
		s.engines = append(prefill, decode...)
		s.entry = len(prefill)
	} else {
		if cfg.Disaggregation != (runresult.DisaggregationConfig{}) {
			return nil, fmt.Errorf("simulate config: disaggregation settings need mode %s", runresult.ModeDisaggregated)
		}
		if m.IsMoE() && l.DP > 1 {
			if err := s.lockstepRanks(cfg, m, l, newRole); err != nil {
				return nil, err
			}
			s.outstanding = make([]int, s.entry)
			return s, nil
		}
		one := l
		one.DP = 1
		r, err := newRole(one)
		if err != nil {
			return nil, err
		}
		e.ExecutionMode = r.cost.ExecutionMode()
		s.cfg, s.memory, s.cost = cfg, r.memory, r.cost
		for i := 0; i < l.DP; i++ {
			replica := i
			sched := newScheduler(cfg.Engine, r.memory.Blocks, s.col.itl, func(r *reqState, nowS float64) {
				s.col.finish(r, nowS)
				s.outstanding[replica]--
				s.completed(r.id, nowS)
			})
			s.engines = append(s.engines, newEngine(i, RoleReplica, &s.loop, r.cost, sched, l.PP, e.AsyncScheduling, opts.Observer))
		}
		s.entry = l.DP
	}
	s.outstanding = make([]int, s.entry)
	return s, nil
}

// Config is the run's configuration with defaults resolved.
func (s *Simulation) Config() runresult.Config { return s.cfg }

// Handle implements Actor: the arrival of s.arrivals[slot].
func (s *Simulation) Handle(nowS float64, _, slot int) {
	q := &s.arrivals[slot]
	s.freeArrivals = append(s.freeArrivals, int32(slot))
	if !s.col.arrive(q, s.cfg.Engine.MaxModelLen) {
		s.completed(q.ID, nowS) // refused
	} else {
		var i int
		if s.balance != nil {
			i = s.balance.pick(nowS)
		} else {
			i = s.router.Pick(s.outstanding)
		}
		s.outstanding[i]++
		if s.disagg != nil {
			s.disagg.arrive(i, nowS, q)
		} else {
			s.engines[i].Admit(nowS, q)
		}
	}
	if s.fb == nil {
		s.scheduleNext()
	}
}

// scheduleNext reads the next arrival, checks it and schedules it,
// reporting whether there was one.
func (s *Simulation) scheduleNext() bool {
	q, ok := s.src.Next()
	if !ok {
		if e, ok := s.src.(interface{ Err() error }); ok {
			s.err = e.Err()
		}
		return false
	}
	switch {
	case !(q.ArrivalS >= 0) || math.IsInf(q.ArrivalS, 0): // NaN too
		s.err = fmt.Errorf("simulate: request %d: arrival %g s is not a non-negative time", q.ID, q.ArrivalS)
	case s.fb != nil && q.ArrivalS < s.loop.Now():
		s.err = fmt.Errorf("simulate: request %d: arrival %g s is before now (%g s): a closed-loop source sends requests after the replies they wait for", q.ID, q.ArrivalS, s.loop.Now())
	case s.fb == nil && q.ArrivalS < s.prevArrivalS:
		s.err = fmt.Errorf("simulate: request %d: arrival %g s is before the previous arrival %g s (arrivals must be sorted)", q.ID, q.ArrivalS, s.prevArrivalS)
	case q.PromptTokens < 1:
		s.err = fmt.Errorf("simulate: request %d: %d prompt tokens (need at least 1)", q.ID, q.PromptTokens)
	case q.OutputTokens < 1:
		s.err = fmt.Errorf("simulate: request %d: %d output tokens (need at least 1)", q.ID, q.OutputTokens)
	default:
		s.prevArrivalS = q.ArrivalS
		var slot int32
		if n := len(s.freeArrivals); n > 0 {
			slot, s.freeArrivals = s.freeArrivals[n-1], s.freeArrivals[:n-1]
		} else {
			slot = int32(len(s.arrivals))
			s.arrivals = append(s.arrivals, spec.Request{})
		}
		s.arrivals[slot] = q
		s.loop.Schedule(q.ArrivalS, PriorityArrival, s, evArrival, int(slot))
		return true
	}
	return false
}

// Run replays src to the end and summarises the run. A Simulation runs
// once.
func (s *Simulation) Run(src Source) (*runresult.Summary, error) {
	if s.ran {
		return nil, fmt.Errorf("simulate: a Simulation runs once")
	}
	s.ran, s.src = true, src
	s.fb, _ = src.(FeedbackSource)
	s.pull()
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
			return nil, fmt.Errorf("simulate: internal error: %s %d ended with %d unfinished requests", e.role, e.id, n)
		}
	}
	if s.disagg != nil {
		if n := s.disagg.inFlight(); n > 0 {
			return nil, fmt.Errorf("simulate: internal error: %d requests ended between prefill and decode", n)
		}
	}
	return s.summary(), nil
}

// summary assembles the run's results.
func (s *Simulation) summary() *runresult.Summary {
	sum := &runresult.Summary{SchemaVersion: runresult.SummarySchemaVersion, Config: s.cfg, CostModel: s.cost.Report(),
		Memory: s.memory, Metrics: s.col.metrics()}
	if s.decodeCost != nil {
		r := s.decodeCost.Report()
		sum.DecodeCostModel, sum.DecodeMemory = &r, s.decodeMemory
	}
	acc := map[string]*breakdownAcc{}
	var roles []string
	for _, e := range s.engines {
		r := e.report()
		sum.Replicas = append(sum.Replicas, r)
		sum.Metrics.Steps += r.Steps
		sum.Metrics.Preemptions += r.Preemptions
		sum.Metrics.PeakKVUsage = max(sum.Metrics.PeakKVUsage, r.PeakKVUsage)
		pc := e.sched.prefixCacheStats()
		sum.Metrics.PrefixCache.Add(&pc)
		if acc[e.role] == nil {
			acc[e.role] = &breakdownAcc{}
			roles = append(roles, e.role)
		}
		acc[e.role].merge(&e.breakdown)
	}
	for _, r := range roles {
		sum.Breakdown = append(sum.Breakdown, acc[r].report(r))
	}
	return sum
}
