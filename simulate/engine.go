package simulate

import (
	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Engine event kinds.
const (
	evStep      = iota // stage 0 became free: try to launch a batch
	evBatchDone        // a batch left the last stage (arg: its slot)
)

// StageSpan is one batch's time on one pipeline stage: from when its
// worker takes the batch to when the stage is done with it (its GPU
// finished the forward pass; on the last stage, also the host work after).
type StageSpan struct {
	StartS, EndS float64
	// CPUEndS is when the stage's worker let the batch go. On a pipeline's
	// stages before the last it is the end of issuing (the worker then
	// takes the next batch while its GPU still runs this one); otherwise
	// EndS.
	CPUEndS float64
	Cost    cost.StepCost
	// Async and Overlap say how host time met the forward pass (see
	// StepCost.WallMs).
	Async, Overlap bool
}

// StepRecord describes one engine step (one batch) for observers. Slices
// are reused: an observer copies what it keeps.
type StepRecord struct {
	// Role is replica (co-located), prefill or decode; Replica numbers the
	// engines of a run from 0, prefill instances before decode ones.
	Role    string
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
	// DecodeTokens is the decoding sequences' tokens: one each, or with
	// speculative decoding the last sampled token and the drafts each
	// verifies.
	DecodeTokens int
	// Preempted is the number of requests preempted to make room.
	Preempted int
	// KV blocks in use after scheduling, and the replica's total.
	KVBlocksUsed, KVBlocksTotal int
	// Running and Waiting are the queue lengths after scheduling.
	Running, Waiting int
	// Dummy marks the dummy batch an idle data-parallel MoE rank runs so
	// that the others' MoE collectives complete (no requests, no tokens of
	// its own).
	Dummy bool
}

// StepObserver sees every engine step as it is scheduled.
type StepObserver interface {
	ObserveStep(r *StepRecord)
}

// engine is one serving replica: the scheduler's policy driven through
// time. A batch runs through the pipeline stages in order and up to PP
// batches are in flight. Without PP a new one is scheduled when the last
// one's outputs are back; with PP the engine core keeps a batch queue (see
// batchQueue) and schedules only when a batch returns or when it is idle.
type engine struct {
	id       int
	role     string // RoleReplica, RolePrefill or RoleDecode
	loop     *Loop
	cost     CostModel
	sched    *scheduler
	observer StepObserver
	async    bool
	// afterBatch, when set, runs after each batch's outputs are applied.
	afterBatch func(nowS float64)
	breakdown  breakdownAcc
	stageRan   []bool

	pp       int
	batches  []batch
	busy     []bool
	inflight int
	// stageFreeS is when each stage's worker is free to take a batch;
	// gpuFreeS when its GPU has run every batch issued to it.
	stageFreeS []float64
	gpuFreeS   []float64
	// stepAtS is the time of the evStep scheduled by kick and not yet
	// handled (-1: none).
	stepAtS float64
	shape   cost.BatchShape
	costs   []cost.StepCost
	steps   int64
	rec     StepRecord
	// group steps the engine in lockstep with the other DP ranks of an
	// MoE deployment (nil: the engine steps on its own); dummySteps and
	// syncWaitMs count the dummy batches it ran and the time it waited
	// for slower ranks.
	group      *lockstep
	dummySteps int64
	syncWaitMs float64
	// pending holds requests that arrived while a batch was in flight
	// under async scheduling (see Admit); reused between steps.
	pending []spec.Request
}

// engineParts are what an engine is built from.
type engineParts struct {
	id    int
	role  string // RoleReplica, RolePrefill or RoleDecode
	pp    int
	async bool
	cost  CostModel
	sched *scheduler
	// observer, when set, sees every step.
	observer StepObserver
	// afterBatch, when set, runs after each batch's outputs are applied.
	afterBatch func(nowS float64)
	// group, when set, is the lockstep the engine joins as its next rank.
	group *lockstep
}

func newEngine(loop *Loop, p engineParts) *engine {
	pp, sched := p.pp, p.sched
	e := &engine{id: p.id, role: p.role, loop: loop, cost: p.cost, sched: sched, observer: p.observer, pp: pp, stepAtS: -1, async: p.async,
		afterBatch: p.afterBatch, group: p.group,
		batches: make([]batch, pp), busy: make([]bool, pp), stageFreeS: make([]float64, pp), gpuFreeS: make([]float64, pp),
		costs: make([]cost.StepCost, pp), stageRan: make([]bool, pp)}
	n := sched.cfg.MaxNumSeqs
	for i := range e.batches {
		e.batches[i].entries = make([]batchEntry, 0, n)
	}
	e.shape = cost.BatchShape{PrefillChunks: make([]int, 0, n), PrefillContexts: make([]int, 0, n), DecodeContexts: make([]int, 0, n)}
	if p.observer != nil {
		e.rec.Stages = make([]StageSpan, pp)
	}
	if p.group != nil {
		p.group.join(e)
	}
	return e
}

// Admit queues an arriving request. When the engine can start a batch now,
// a step is scheduled for now, after every arrival at this time.
//
// With async scheduling a request that arrives while a batch is in flight
// waits one batch more: vLLM's engine core (v1/engine/core.py,
// step_with_batch_queue, batch queue of 2) schedules batch n+1 as soon as
// batch n is submitted and only then blocks on batch n; new requests are
// added to the scheduler between those blocking waits (run_busy_loop,
// _process_input_queue), so one arriving during batch n joins batch n+2,
// which starts when n+1 ends. Without async scheduling it joins n+1.
//
// With pipeline parallelism a request arriving while any batch is in flight
// waits for the next batch to come back (see batchQueue).
//
// A data-parallel rank decides alone: each DP rank is an engine core with
// its own batch queue (DPEngineCoreProc runs the same step function), so a
// rank whose own batch is in flight under async scheduling holds a new
// request for one batch more, while a rank running a dummy batch (executed
// synchronously, execute_dummy_batch) reads it as soon as that returns.
func (e *engine) Admit(nowS float64, q *spec.Request) {
	if (e.batchQueue() || e.async && e.pp == 1) && e.inflight > 0 {
		e.pending = append(e.pending, *q)
		return
	}
	e.sched.admit(q)
	e.kick(nowS)
}

// batchQueue reports whether the engine core runs pipeline stages from a
// batch queue, as vLLM V1 does whenever max_concurrent_batches (the PP
// size) is above 1 (v1/engine/core.py, EngineCore.__init__ and
// step_with_batch_queue). The core schedules without blocking while the
// queue has room and the scheduler returns work: the next micro-batch is
// chosen at once, not when stage 0 frees, and waits for stage 0 on the
// workers. When the queue is full or nothing is schedulable (a request
// whose previous micro-batch is in flight is not rescheduled until its
// output is back: Scheduler.schedule finds no new tokens for it), the core
// blocks on the oldest batch, applies its output (update_from_output) and
// only then reads new requests (run_busy_loop, _process_input_queue) and
// schedules again. So a request that arrives while a batch is in flight
// joins the first batch scheduled after the next one returns, and requests
// that arrive between returns share a micro-batch instead of opening one
// each. Every schedule call has the whole token budget; max_num_seqs
// counts the running requests of all micro-batches together.
func (e *engine) batchQueue() bool { return e.pp > 1 && e.group == nil }

// releasePending hands the requests held by Admit to the scheduler,
// reporting whether there were any.
func (e *engine) releasePending() bool {
	if len(e.pending) == 0 {
		return false
	}
	for i := range e.pending {
		e.sched.admit(&e.pending[i])
	}
	e.pending = e.pending[:0]
	return true
}

// kick schedules a step for now when the engine can start a batch now and
// none is scheduled yet: after new work arrives or blocks were freed.
func (e *engine) kick(nowS float64) {
	if e.group != nil {
		e.group.kick(nowS)
		return
	}
	if e.batchQueue() && e.inflight > 0 {
		return // the core is blocked on a batch: it schedules when one returns
	}
	if e.inflight < e.pp && e.stageFreeS[0] <= nowS && e.stepAtS != nowS {
		e.stepAtS = nowS
		e.loop.Schedule(nowS, PriorityEngine, e, evStep, 0)
	}
}

// Handle implements Actor.
func (e *engine) Handle(nowS float64, kind, arg int) {
	if kind == evStep {
		// A kick later at this same time (blocks freed by a KV transfer)
		// must schedule another try.
		e.stepAtS = -1
	}
	if kind == evBatchDone {
		e.sched.complete(&e.batches[arg], nowS)
		e.busy[arg] = false
		e.inflight--
		if e.afterBatch != nil {
			e.afterBatch(nowS)
		}
	}
	e.tryStep(nowS)
}

// tryStep schedules and launches a batch if stage 0 is free and a batch
// slot is open; with a batch queue, batches until the queue is full or
// nothing is left to schedule.
func (e *engine) tryStep(nowS float64) {
	if e.batchQueue() {
		e.releasePending()
		for e.inflight < e.pp && e.launch(nowS) {
		}
		return
	}
	if e.inflight == e.pp || e.stageFreeS[0] > nowS {
		return
	}
	e.launch(nowS)
}

// launch schedules a batch into a free slot and sends it through the
// stages, each stage taking it when free; it reports whether anything was
// scheduled.
func (e *engine) launch(nowS float64) bool {
	slot := 0
	for e.busy[slot] {
		slot++
	}
	b := &e.batches[slot]
	e.sched.nowS = nowS
	// Under async scheduling (Admit) this batch was chosen while the one
	// that just ended ran, before the requests pending now had been added;
	// when that left nothing to run, vLLM had no batch queued and
	// schedules them at once. They join the scheduler for the next batch.
	ok := e.sched.schedule(b, &e.shape)
	if !ok && e.releasePending() {
		ok = e.sched.schedule(b, &e.shape)
	}
	e.releasePending()
	if !ok {
		return false
	}
	e.busy[slot] = true
	e.inflight++
	e.steps++
	var t float64
	if e.pp > 1 {
		t = e.runPipeline(nowS)
	} else {
		c := &e.costs[0]
		e.cost.StageCost(&e.shape, 0, c)
		start := max(nowS, e.stageFreeS[0])
		// Host work overlaps the forward pass before it only when the
		// engine was busy right up to this batch.
		overlap := e.async && e.stageRan[0] && e.stageFreeS[0] >= nowS
		e.stageRan[0] = true
		wall := c.WallMs(e.async, overlap)
		e.breakdown.add(c, e.async, overlap, wall)
		t = start + wall/1e3
		e.stageFreeS[0] = t
		if e.observer != nil {
			e.rec.Stages[0] = StageSpan{StartS: start, EndS: t, CPUEndS: t, Cost: *c, Async: e.async, Overlap: overlap}
		}
	}
	e.loop.Schedule(t, PriorityEngine, e, evBatchDone, slot)
	if e.observer != nil {
		e.observe(b, nowS, t)
	}
	return true
}

// runPipeline sends the batch scheduled at nowS through the pipeline
// stages and returns when its outputs are applied. Each stage is its own
// worker process with its own CPU timeline beside its GPU's, as vLLM V1
// runs them (v1/worker/gpu_worker.py, Worker.execute_model): the engine
// core schedules and broadcasts the scheduler output to every worker
// (CoreBeforeMs); a stage after the first blocks in recv_tensor_dict until
// the stage before it has issued its forward pass and sent the metadata of
// its activations over the CPU group (vllm/distributed/parallel_state.py,
// send_tensor_dict: send_object, then the tensors over NCCL), then
// prepares its inputs and issues its own layers while its GPU waits for
// the activations; a stage before the last then takes its next batch
// without waiting for its GPU. Only the last stage's worker waits for the
// GPU, to sample; the engine core then applies the outputs (CoreAfterMs).
// Within a stage the forward pass is the cost model's two timelines
// started when the worker begins issuing, its GPU starting no earlier than
// the activations arrive and its previous batch ends:
//
//	gpu end = max(issue start + forward, gpu ready + device time)
//
// (the span algebra of cost/timeline.go with the first GPU op held back).
// Async scheduling changes nothing here: the workers of a pipeline already
// run ahead of their GPUs.
func (e *engine) runPipeline(nowS float64) float64 {
	cpuReadyS, gpuReadyS := nowS, nowS
	var endS float64
	for s := 0; s < e.pp; s++ {
		c := &e.costs[s]
		e.cost.StageCost(&e.shape, s, c)
		hb, ha := c.Ms[cost.CompHostBefore], c.Ms[cost.CompHostAfter]
		start := max(nowS+c.CoreBeforeMs/1e3, cpuReadyS, e.stageFreeS[s])
		issueS := start + (hb-c.CoreBeforeMs)/1e3
		gpuEndS := max(issueS+c.GPUMs()/1e3, max(gpuReadyS, e.gpuFreeS[s])+c.DeviceMs()/1e3)
		cpuEndS := issueS + c.Ms[cost.CompLaunch]/1e3
		endS = gpuEndS
		if s == e.pp-1 {
			cpuEndS = gpuEndS + (ha-c.CoreAfterMs)/1e3
			endS = gpuEndS + ha/1e3
		}
		e.stageFreeS[s], e.gpuFreeS[s] = cpuEndS, gpuEndS
		cpuReadyS, gpuReadyS = cpuEndS, gpuEndS
		e.breakdown.add(c, false, false, c.TotalMs())
		if e.observer != nil {
			e.rec.Stages[s] = StageSpan{StartS: start, EndS: endS, CPUEndS: cpuEndS, Cost: *c}
		}
	}
	return endS
}

func (e *engine) observe(b *batch, startS, endS float64) {
	r := &e.rec
	r.Role = e.role
	r.Replica, r.Step, r.StartS, r.EndS = e.id, e.steps, startS, endS
	r.Tokens, r.Seqs = b.tokens, len(b.entries)
	r.PrefillTokens, r.PrefillSeqs, r.DecodeSeqs, r.DecodeTokens, r.Preempted = b.prefillTokens, b.prefillSeqs, b.decodeSeqs, b.decodeTokens, b.preempted
	r.KVBlocksUsed, r.KVBlocksTotal = e.sched.usedBlocks(), e.sched.totalBlocks
	r.Running, r.Waiting = len(e.sched.running), e.sched.waiting.len()+e.sched.ready.len()+len(e.pending)
	e.observer.ObserveStep(r)
}

func (e *engine) report() runresult.ReplicaReport {
	s := e.sched
	role := e.role
	if role == RoleReplica {
		role = ""
	}
	return runresult.ReplicaReport{Replica: e.id, Role: role, Steps: e.steps, Preemptions: s.preemptions, KVBlocks: s.totalBlocks,
		PeakKVUsage: float64(s.peakUsedBlocks) / float64(s.totalBlocks), DummySteps: e.dummySteps, SyncWaitMs: e.syncWaitMs}
}
