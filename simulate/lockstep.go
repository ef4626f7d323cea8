package simulate

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Data-parallel MoE ranks step in lockstep, as vLLM runs them
// (vllm/v1/engine/core.py, DPEngineCoreProc.run_busy_loop, v0.9 to main
// 2025-11): each DP rank is an engine core with its own scheduler and KV
// cache, but an MoE layer's dispatch and combine are collectives over the
// EP group that spans every rank, so every rank runs every forward pass.
// A rank with nothing scheduled while another has work runs a dummy batch
// (execute_dummy_batch); when no rank has work the wave ends and the loop
// pauses. Before each forward pass the ranks agree on their token counts
// (DPMetadata.num_tokens_across_dp) and, unless the engine is eager, every
// rank pads its batch to the largest (gpu_model_runner.get_dp_padding,
// v0.9-v0.10; coordinate_batch_across_dp from v0.11), so CUDA graphs and
// the collectives see one size. Every layer ends at the slowest rank: the
// step of the group lasts as long as its slowest rank's.

// LockstepCostModel prices one lockstep step of the DP ranks of an MoE
// engine: rank r runs batch b[r] (a dummy batch when it has no tokens).
// The MoE layers of all ranks are one set of collectives: their routed
// part is priced once, for the tokens of every rank together.
type LockstepCostModel interface {
	LockstepCost(b []*cost.BatchShape, c []cost.StepCost)
}

// lockstep drives the engines of one data-parallel MoE deployment: a step
// starts when the previous one ended and some rank has work; every rank
// runs it (dummy batches on idle ranks) and it ends when the slowest rank
// is done. Pipeline parallelism is not combined with it (New refuses
// PP > 1 with DP MoE).
type lockstep struct {
	loop  *Loop
	ranks []*engine
	cost  LockstepCostModel
	async bool

	busy    bool
	freeS   float64 // when the step in flight ends
	stepAtS float64 // a scheduled evStep not yet handled (-1: none)
	ran     bool
	has     []bool
	shapes  []*cost.BatchShape
	costs   []cost.StepCost
	// steps counts lockstep steps; every rank runs each of them.
	steps int64
	// layerRuns counts, per rank, the steps whose cost included the MoE
	// layers (TestLockstep checks that every rank runs every step's).
	layerRuns []int64
}

// newLockstep returns the lockstep of n DP ranks priced by cm; each rank
// joins it as its engine is built (newEngine).
func newLockstep(loop *Loop, n int, cm LockstepCostModel, async bool) *lockstep {
	return &lockstep{loop: loop, cost: cm, async: async, stepAtS: -1,
		ranks: make([]*engine, 0, n), shapes: make([]*cost.BatchShape, 0, n),
		has: make([]bool, n), costs: make([]cost.StepCost, n), layerRuns: make([]int64, n)}
}

// join adds engine e as the next rank.
func (g *lockstep) join(e *engine) {
	g.ranks = append(g.ranks, e)
	g.shapes = append(g.shapes, &e.shape)
}

// kick schedules a step for now when none is in flight or scheduled.
func (g *lockstep) kick(nowS float64) {
	if !g.busy && g.stepAtS != nowS {
		g.stepAtS = nowS
		g.loop.Schedule(nowS, PriorityEngine, g, evStep, 0)
	}
}

// Handle implements Actor.
func (g *lockstep) Handle(nowS float64, kind, _ int) {
	if kind == evStep {
		g.stepAtS = -1
	}
	if kind == evBatchDone {
		g.busy = false
		for i, e := range g.ranks {
			e.inflight = 0
			if g.has[i] {
				e.sched.complete(&e.batches[0], nowS)
				if e.afterBatch != nil {
					e.afterBatch(nowS)
				}
			}
		}
	}
	g.tryStep(nowS)
}

// tryStep schedules every rank and launches the lockstep step, unless no
// rank has anything to run.
func (g *lockstep) tryStep(nowS float64) {
	if g.busy {
		return
	}
	any := false
	for i, e := range g.ranks {
		// As engine.launch: under async scheduling a rank chose this batch
		// while its last one ran, before the requests it holds (Admit) had
		// been added; with nothing chosen it schedules them at once.
		e.sched.nowS = nowS
		g.has[i] = e.sched.schedule(&e.batches[0], &e.shape)
		if !g.has[i] && e.releasePending() {
			g.has[i] = e.sched.schedule(&e.batches[0], &e.shape)
		}
		e.releasePending()
		any = any || g.has[i]
	}
	if !any {
		return // every rank idle: the wave ends
	}
	// A rank without a batch keeps the empty shape schedule left: its
	// dummy batch, padded to the others' tokens by the cost model.
	g.cost.LockstepCost(g.shapes, g.costs)
	overlap := g.async && g.ran && g.freeS >= nowS
	g.ran = true
	var wallMs float64
	for i := range g.ranks {
		wallMs = math.Max(wallMs, g.costs[i].WallMs(g.async, overlap))
	}
	endS := nowS + wallMs/1e3
	g.steps++
	for i, e := range g.ranks {
		c := &g.costs[i]
		own := c.WallMs(g.async, overlap)
		if c.Ms[cost.CompMoE] > 0 {
			g.layerRuns[i]++
		}
		e.breakdown.add(c, g.async, overlap, own)
		e.syncWaitMs += wallMs - own
		if g.has[i] {
			e.steps++
			e.inflight = 1
		} else {
			e.dummySteps++
		}
		if e.observer != nil {
			e.rec.Stages[0] = StageSpan{StartS: nowS, EndS: endS, CPUEndS: endS, Cost: *c, Async: g.async, Overlap: overlap}
			e.rec.Dummy = !g.has[i]
			e.observe(&e.batches[0], nowS, endS)
		}
	}
	g.busy, g.freeS = true, endS
	g.loop.Schedule(endS, PriorityEngine, g, evBatchDone, 0)
}

// checkLockstep checks that layout l (DP > 1) of MoE model m can run as
// lockstep DP ranks: one engine per rank, each with its own scheduler and
// KV cache sized for one rank, stepped together by a lockstep over one cost
// model of the whole layout. vLLM's --enable-expert-parallel makes the EP
// group every rank (EP = TP x DP); without it (EP = 1) the experts are
// split over the TP x DP ranks instead and the exchange is still a
// collective over all of them.
func checkLockstep(cfg runresult.Config, m *spec.Model, l spec.Layout) error {
	switch {
	case l.PP > 1:
		return fmt.Errorf("simulate: %s at DP=%d with PP=%d: lockstep data parallelism is modelled without pipeline stages; use PP=1", m.Name, l.DP, l.PP)
	case l.EP != 1 && l.EP != l.TP*l.DP:
		return fmt.Errorf("simulate: layout %s: with data parallelism vLLM's expert parallelism spans every rank (EP = TP x DP = %d) or is off (EP = 1)", l, l.TP*l.DP)
	}
	if err := spec.CheckAll2AllBackend(cfg.MoE.All2AllBackend, l); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	return nil
}
