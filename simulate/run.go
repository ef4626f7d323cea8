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
	// RoutingTables, when set, shares MoE routing tables between the
	// simulations given it (cost.RoutingTables: the same outputs, fewer
	// tables drawn); nil: each simulation draws its own.
	RoutingTables *cost.RoutingTables
	// Observer sees every engine step.
	Observer StepObserver
	// Requests receives each request's metrics as it finishes.
	Requests RequestSink
	// FirstToken, when set, is called as each request streams its first
	// output token (a decode instance's first step in a disaggregated run;
	// a prefill instance's discarded token is not one), in simulated-time
	// order, with the request's ID and the time (its FirstTokenS). An
	// error stops the run: Run returns it.
	FirstToken func(requestID int, nowS float64) error
	// Progress, when set, is called every few thousand events with the
	// requests finished so far (completed or rejected) and the simulated
	// time.
	Progress func(finished int, nowS float64)
	// transfers sees every KV transfer of a disaggregated run (Execute's
	// Chrome trace).
	transfers transferObserver
	// Arrivals describes the arrival process for the summary (what
	// datasets.RunArrivals.Describe says); empty when the caller does not.
	Arrivals string
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
	// spec is the run's speculative decoding report (nil: none), its
	// counts summed from the engines' at the end.
	spec *runresult.SpeculativeReport
	opts Options
	loop Loop
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
	// holdWaiting is how many requests may wait in the arrival engines'
	// queues (per engine) before an open-loop source is read no further
	// (held): the scheduler only ever takes the front of its queue, so
	// the requests behind them need not exist yet, and an offline batch of
	// any size runs in memory bounded by what is in flight. held is set
	// while the source is held; release reads on when the queues drain.
	holdWaiting int
	held        bool
	err         error
	ran         bool
}

// holdWaitingMin is the least holdWaiting: a run whose queues never reach
// it never holds its source.
const holdWaitingMin = 8192

// New resolves cfg (Resolve) and builds a simulation of it.
func New(cfg runresult.Config, opts Options) (*Simulation, error) {
	r, err := Resolve(cfg, opts)
	if err != nil {
		return nil, err
	}
	return r.New(opts)
}

// New builds a simulation of r: every part (engines, schedulers, KV links,
// observers, the request sink) is made here and joined as it is made;
// nothing is rewired afterwards. It takes opts' Observer, Requests and
// Progress; the predictors were Resolve's to take.
func (r *Resolved) New(opts Options) (*Simulation, error) {
	cfg := r.cfg
	router, err := NewRouter(cfg.Router)
	if err != nil {
		return nil, err
	}
	s := &Simulation{cfg: cfg, opts: opts, router: router, col: newCollector(opts.Requests, opts.FirstToken),
		entry: r.entry, outstanding: make([]int, r.entry), holdWaiting: max(holdWaitingMin, 2*cfg.Engine.MaxNumSeqs)}
	var costs []*cost.OpCostModel
	if spare := r.spare.Swap(nil); spare != nil {
		costs = *spare
	} else {
		costs = make([]*cost.OpCostModel, len(r.roles))
		for i := range r.roles {
			if costs[i], err = cost.NewOpCostModel(r.roles[i].cost); err != nil {
				return nil, err
			}
		}
	}
	s.memory, s.cost = r.roles[0].memory, costs[0]
	// Each role's engines step through its cost model, wrapped with the
	// drafter's passes under speculative decoding.
	stepCosts := make([]interface {
		CostModel
		LockstepCostModel
	}, len(costs))
	for i, c := range costs {
		stepCosts[i] = c
		if r.spec != nil {
			sc, err := cost.NewSpecCostModel(c, r.roles[i].cost, r.spec, r.drafter)
			if err != nil {
				return nil, err
			}
			stepCosts[i] = sc
			if i == 0 {
				s.spec = r.specReport(sc, &r.roles[0])
			}
		}
	}
	var group *lockstep
	if r.lockstep {
		group = newLockstep(&s.loop, len(r.engines), stepCosts[0], cfg.Engine.AsyncScheduling)
	}
	for _, p := range r.engines {
		ro := &r.roles[p.kind]
		parts := engineParts{id: p.id, role: p.role, pp: ro.layout.PP, async: cfg.Engine.AsyncScheduling,
			cost: stepCosts[p.kind], observer: opts.Observer, group: group}
		ec := cfg.Engine
		var done func(*reqState, float64)
		switch p.role {
		case RoleReplica:
			i := p.id
			done = func(q *reqState, nowS float64) {
				s.col.finish(q, nowS)
				s.outstanding[i]--
				s.completed(q.id, nowS)
			}
		case RolePrefill:
			i := p.id
			done = func(q *reqState, nowS float64) {
				s.outstanding[i]--
				s.disagg.prefilled(i, q, nowS)
			}
		case RoleDecode:
			j := p.id - r.entry
			// Prefix caching runs on the prefill instances; a decode
			// instance receives every request's whole prompt KV cache
			// into blocks reserved for it, so it only counts blocks.
			ec.EnablePrefixCaching = false
			done = func(q *reqState, nowS float64) {
				s.disagg.finished(j, q, nowS)
				s.completed(q.id, nowS)
			}
			parts.afterBatch = func(nowS float64) { s.disagg.admit(j, nowS) }
		}
		// A prefill instance holds a finished request's KV blocks until
		// they are transferred.
		var localKV func(int) int
		if m := r.model; m != nil {
			if _, local := m.KVLayers(ro.layout); local > 0 {
				l, bs := ro.layout, ec.BlockSize
				localKV = func(tokens int) int { return m.LocalKVBlocks(l, tokens, bs) }
			}
		}
		parts.sched = newScheduler(ec, ro.memory.Blocks, s.col.itl, done, p.role == RolePrefill, localKV)
		parts.sched.sd = newSpecDecode(r.spec, cfg.Workload.Seed)
		if opts.FirstToken != nil && p.role != RolePrefill {
			parts.sched.first = s.col.firstToken
		}
		if p.role != RoleDecode {
			parts.sched.tookWaiting = s.release
		}
		e := newEngine(&s.loop, parts)
		if mem := &ro.memory; mem.HostBlocks > 0 {
			addHostTier(&s.loop, e, mem)
		}
		s.engines = append(s.engines, e)
	}
	if cfg.Mode == runresult.ModeDisaggregated {
		mem := r.roles[1].memory
		s.decodeMemory, s.decodeCost = &mem, costs[1]
		decodeRouter, _ := NewRouter(cfg.Router)
		s.disagg = newDisaggregation(r.model, &cfg.Disaggregation, s.col, decodeRouter, &s.loop,
			s.engines[:r.entry], s.engines[r.entry:], opts.transfers)
	}
	if r.lockstep && cfg.Router == runresult.RouterLeastLoaded {
		s.balance = newDPBalancer(s.engines)
	}
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
		if s.col.queue.tick(q.ArrivalS) {
			s.col.queue.record(s.waiting() + s.col.queue.heldBehind(q.ArrivalS, nowS))
		}
	}
	if s.fb == nil {
		if s.queuesFull() {
			s.held = true
		} else {
			s.scheduleNext()
		}
	}
}

// queuesFull reports whether the arrival engines hold holdWaiting requests
// each, waiting or handed to an engine core between steps.
func (s *Simulation) queuesFull() bool {
	n := 0
	for _, e := range s.engines[:s.entry] {
		n += e.sched.waiting.len() + len(e.pending)
	}
	return n >= s.holdWaiting*s.entry
}

// release reads a held source on once the queues have room: the arrival
// is scheduled now, later than it happened, and keeps its own time, so
// its latencies count the wait.
func (s *Simulation) release() {
	if s.held && !s.queuesFull() {
		s.held = false
		s.scheduleNext()
	}
}

// waiting is the number of requests waiting to be scheduled, over every
// engine.
func (s *Simulation) waiting() int {
	n := 0
	for _, e := range s.engines {
		n += e.sched.waiting.len() + e.sched.ready.len()
	}
	return n
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
		s.loop.Schedule(max(q.ArrivalS, s.loop.Now()), PriorityArrival, s, evArrival, int(slot))
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
			s.opts.Progress(s.col.completed+s.col.rejected, s.loop.Now())
		}
	}
	if s.err == nil {
		s.err = s.col.err
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.opts.Progress != nil {
		s.opts.Progress(s.col.completed+s.col.rejected, s.loop.Now())
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
	sum.Workload = runresult.WorkloadReport{Source: s.cfg.Workload.Source(), Arrivals: s.opts.Arrivals, Requests: sum.Metrics.Arrived}
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
	if s.spec != nil {
		sp := *s.spec
		for _, e := range s.engines {
			e.sched.sd.addTo(&sp)
		}
		sum.Speculative = &sp
	}
	return sum
}
