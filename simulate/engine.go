package simulate

import "github.com/ftk-dev/ftk/datasets"

// Engine event kinds.
const (
	evStep      = iota // stage 0 became free: try to launch a batch
	evBatchDone        // a batch left the last stage (arg: its slot)
)

// StageSpan is one batch's time on one pipeline stage.
type StageSpan struct {
	StartS, EndS float64
	Cost         StepCost
}

// StepRecord describes one engine step (one batch) for observers. Slices
// are reused: an observer copies what it keeps.
type StepRecord struct {
	Replica int
	Step    int64
	// StartS is when the batch was scheduled, EndS when its outputs came
	// back from the last stage.
	StartS, EndS  float64
	Stages        []StageSpan
	Tokens        int
	Seqs          int
	PrefillTokens int
	PrefillSeqs   int
	DecodeSeqs    int
	// Preempted is the number of requests preempted to make room.
	Preempted int
	// KV blocks in use after scheduling, and the replica's total.
	KVBlocksUsed, KVBlocksTotal int
	// Running and Waiting are the queue lengths after scheduling.
	Running, Waiting int
}

// StepObserver sees every engine step as it is scheduled.
type StepObserver interface {
	ObserveStep(r *StepRecord)
}

// engine is one serving replica: the scheduler's policy driven through
// time. A batch runs through the pipeline stages in order; up to PP batches
// are in flight, and a new one is scheduled whenever stage 0 is free and a
// batch slot is open.
type engine struct {
	id       int
	loop     *Loop
	cost     CostModel
	sched    *scheduler
	observer StepObserver

	pp         int
	batches    []batch
	busy       []bool
	inflight   int
	stageFreeS []float64
	// stepAtS is the time of the last evStep scheduled on admission.
	stepAtS float64
	shape   BatchShape
	costs   []StepCost
	steps   int64
	rec     StepRecord
}

func newEngine(id int, loop *Loop, cost CostModel, sched *scheduler, pp int, obs StepObserver) *engine {
	e := &engine{id: id, loop: loop, cost: cost, sched: sched, observer: obs, pp: pp, stepAtS: -1,
		batches: make([]batch, pp), busy: make([]bool, pp), stageFreeS: make([]float64, pp),
		costs: make([]StepCost, pp)}
	n := sched.cfg.MaxNumSeqs
	for i := range e.batches {
		e.batches[i].entries = make([]batchEntry, 0, n)
	}
	e.shape = BatchShape{PrefillChunks: make([]int, 0, n), PrefillContexts: make([]int, 0, n), DecodeContexts: make([]int, 0, n)}
	if obs != nil {
		e.rec.Stages = make([]StageSpan, pp)
	}
	return e
}

// Admit queues an arriving request. When the engine can start a batch now,
// a step is scheduled for now, after every arrival at this time.
func (e *engine) Admit(nowS float64, q *datasets.Request) {
	e.sched.admit(q)
	if e.inflight < e.pp && e.stageFreeS[0] <= nowS && e.stepAtS != nowS {
		e.stepAtS = nowS
		e.loop.Schedule(nowS, PriorityEngine, e, evStep, 0)
	}
}

// Handle implements Actor.
func (e *engine) Handle(nowS float64, kind, arg int) {
	if kind == evBatchDone {
		e.sched.complete(&e.batches[arg], nowS)
		e.busy[arg] = false
		e.inflight--
	}
	e.tryStep(nowS)
}

// tryStep schedules and launches a batch if stage 0 is free and a batch
// slot is open.
func (e *engine) tryStep(nowS float64) {
	if e.inflight == e.pp || e.stageFreeS[0] > nowS {
		return
	}
	slot := 0
	for e.busy[slot] {
		slot++
	}
	b := &e.batches[slot]
	if !e.sched.schedule(b, &e.shape) {
		return
	}
	e.busy[slot] = true
	e.inflight++
	e.steps++
	t := nowS
	for s := 0; s < e.pp; s++ {
		c := &e.costs[s]
		e.cost.StageCost(&e.shape, s, c)
		start := max(t, e.stageFreeS[s])
		t = start + c.TotalMs()/1e3
		e.stageFreeS[s] = t
		if e.observer != nil {
			e.rec.Stages[s] = StageSpan{StartS: start, EndS: t, Cost: *c}
		}
	}
	e.loop.Schedule(t, PriorityEngine, e, evBatchDone, slot)
	if e.pp > 1 && e.stageFreeS[0] < t {
		e.loop.Schedule(e.stageFreeS[0], PriorityEngine, e, evStep, 0)
	}
	if e.observer != nil {
		e.observe(b, nowS, t)
	}
}

func (e *engine) observe(b *batch, startS, endS float64) {
	r := &e.rec
	r.Replica, r.Step, r.StartS, r.EndS = e.id, e.steps, startS, endS
	r.Tokens, r.Seqs = b.tokens, len(b.entries)
	r.PrefillTokens, r.PrefillSeqs, r.DecodeSeqs, r.Preempted = b.prefillTokens, b.prefillSeqs, b.decodeSeqs, b.preempted
	r.KVBlocksUsed, r.KVBlocksTotal = e.sched.usedBlocks(), e.sched.totalBlocks
	r.Running, r.Waiting = len(e.sched.running), e.sched.waiting.len()
	e.observer.ObserveStep(r)
}

// ReplicaReport is one replica's engine statistics.
type ReplicaReport struct {
	Replica     int     `json:"replica"`
	Steps       int64   `json:"steps"`
	Preemptions int64   `json:"preemptions"`
	KVBlocks    int     `json:"kv_blocks"`
	PeakKVUsage float64 `json:"peak_kv_usage"`
}

func (e *engine) report() ReplicaReport {
	s := e.sched
	return ReplicaReport{Replica: e.id, Steps: e.steps, Preemptions: s.preemptions, KVBlocks: s.totalBlocks,
		PeakKVUsage: float64(s.peakUsedBlocks) / float64(s.totalBlocks)}
}
