package simulate

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// lockstepLog records every rank's record of every lockstep step.
type lockstepLog struct {
	t     *testing.T
	ranks int
	// byStart groups records by their step's start time.
	starts []float64
	recs   [][]StepRecord
	checks *checkSteps
}

func (l *lockstepLog) ObserveStep(r *StepRecord) {
	l.checks.ObserveStep(r)
	n := len(l.starts)
	if n == 0 || l.starts[n-1] != r.StartS {
		l.starts = append(l.starts, r.StartS)
		l.recs = append(l.recs, nil)
		n++
	}
	c := *r
	c.Stages = append([]StageSpan(nil), r.Stages...)
	l.recs[n-1] = append(l.recs[n-1], c)
}

func dpConfig(dp int, workload string, rate float64, n int) runresult.Config {
	cfg := testConfig()
	cfg.Model = "qwen3-30b-a3b"
	cfg.Layout = spec.Layout{TP: 1, EP: dp, DP: dp}
	cfg.Engine.MaxModelLen = 4096
	cfg.Workload = runresult.WorkloadConfig{Workload: workload, RatePerS: rate, NumRequests: n, Seed: 3}
	return cfg
}

// Every rank runs every MoE layer of every lockstep step: each step has one
// record per rank, all ending together at the slowest rank's time; a rank
// without work runs a dummy batch that still pays the MoE layers and the
// exchange; a rank's steps and dummy steps add up to the group's steps.
func TestLockstepEveryRankRunsEveryMoELayer(t *testing.T) {
	for _, dp := range []int{2, 8} {
		for _, backend := range []string{spec.All2AllAllgatherRS, spec.All2AllNaive, spec.All2AllPPLX, spec.All2AllDeepEPLL} {
			cfg := dpConfig(dp, "fixed:700x60", float64(2*dp), 40*dp)
			cfg.MoE = runresult.MoEConfig{All2AllBackend: backend}
			cfg.Router = runresult.RouterLeastLoaded
			log := &lockstepLog{t: t, ranks: dp, checks: &checkSteps{t: t, cfg: cfg.Engine}}
			rs := genRequests(t, cfg)
			sim, err := New(cfg, Options{Observer: log})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := sim.Run(NewSliceSource(rs))
			if err != nil {
				t.Fatal(err)
			}
			dummies := 0
			for i, recs := range log.recs {
				if len(recs) != dp {
					t.Fatalf("DP%d %s: step %d has %d rank records, want %d", dp, backend, i, len(recs), dp)
				}
				end := recs[0].EndS
				slowest := 0.0
				for _, r := range recs {
					c := r.Stages[0].Cost
					if r.EndS != end {
						t.Fatalf("DP%d %s step %d: rank %d ends at %g, rank 0 at %g", dp, backend, i, r.Replica, r.EndS, end)
					}
					if !(c.Ms[cost.CompMoE] > 0 && c.Ms[cost.CompEPComm] > 0) {
						t.Fatalf("DP%d %s step %d rank %d (dummy %v): MoE %g ms, EP exchange %g ms: every rank runs every MoE layer", dp, backend, i, r.Replica, r.Dummy, c.Ms[cost.CompMoE], c.Ms[cost.CompEPComm])
					}
					if r.Dummy {
						dummies++
						if r.Tokens != 0 || r.Seqs != 0 {
							t.Fatalf("dummy batch with %d tokens, %d sequences", r.Tokens, r.Seqs)
						}
					}
					slowest = math.Max(slowest, c.TotalMs())
				}
				if d := (end - recs[0].StartS) * 1e3; math.Abs(d-slowest) > 1e-9*slowest {
					t.Fatalf("DP%d %s step %d lasts %g ms, slowest rank %g ms", dp, backend, i, d, slowest)
				}
			}
			var steps, dummy int64
			for _, r := range sum.Replicas {
				if r.Steps+r.DummySteps != int64(len(log.recs)) {
					t.Errorf("DP%d %s rank %d: %d steps + %d dummy, group ran %d", dp, backend, r.Replica, r.Steps, r.DummySteps, len(log.recs))
				}
				steps += r.Steps
				dummy += r.DummySteps
			}
			if dummy != int64(dummies) || steps != sum.Metrics.Steps {
				t.Errorf("DP%d %s: %d dummy records vs %d, %d steps vs %d", dp, backend, dummies, dummy, steps, sum.Metrics.Steps)
			}
			t.Logf("DP%d EP%d %s: %d lockstep steps, %d dummy batches, TPOT mean %.2f ms", dp, dp, backend, len(log.recs), dummy, sum.Metrics.TPOTMs.Mean)
		}
	}
}

// Conservation, Little's law and the engine limits on DP2 x EP2 and
// DP8 x EP8, with vLLM's load balancer and with round-robin.
func TestLockstepConservation(t *testing.T) {
	for _, c := range []struct {
		dp     int
		router string
	}{{2, runresult.RouterLeastLoaded}, {8, runresult.RouterRoundRobin}, {8, runresult.RouterLeastLoaded}} {
		cfg := dpConfig(c.dp, "fixed:900x120", float64(3*c.dp), 60*c.dp)
		cfg.Router = c.router
		cfg.Engine.NumGPUBlocksOverride = 300 // small caches: preemptions
		run := runChecked(t, cfg)
		if run.sum.Metrics.Completed == 0 {
			t.Fatal("nothing completed")
		}
		for _, r := range run.sum.Replicas {
			if r.Steps == 0 {
				t.Errorf("DP%d %s: rank %d never ran a batch", c.dp, c.router, r.Replica)
			}
		}
	}
}

// Same inputs and seed, same bytes out; another seed, another run.
func TestLockstepDeterminism(t *testing.T) {
	run := func(seed uint64) []byte {
		cfg := dpConfig(8, "fixed:500x80", 20, 300)
		cfg.Router = runresult.RouterLeastLoaded
		cfg.MoE.Seed = seed
		sum, _, _, _ := simulate(t, cfg, genRequests(t, cfg))
		b, err := json.Marshal(sum)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b, c := run(1), run(1), run(2)
	if !bytes.Equal(a, b) {
		t.Error("two runs with one seed differ")
	}
	if bytes.Equal(a, c) {
		t.Error("routing seeds 1 and 2 gave identical runs")
	}
}

// vLLM's balancer: lowest waiting x 4 + running, the first of equal ranks,
// counts as last published (every 100 ms) plus the requests sent since.
func TestDPBalancerScoresAsVLLM(t *testing.T) {
	cfg := dpConfig(2, "fixed:10x10", 0, 0)
	sim, err := New(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := newDPBalancer(sim.engines)
	// Rank 0 runs 3, rank 1 has one waiting: scores 3 and 4.
	for i := 0; i < 3; i++ {
		sim.engines[0].sched.running = append(sim.engines[0].sched.running, int32(i))
	}
	sim.engines[1].sched.waiting.pushBack(0)
	if got := b.pick(0); got != 0 {
		t.Errorf("picked rank %d, want 0 (score 3 < 4)", got)
	}
	// Rank 0 now counts one sent request: 4 + 3 = 7 > 4.
	if got := b.pick(0.05); got != 1 {
		t.Errorf("picked rank %d, want 1 after the local increment", got)
	}
	// Rank 1: 8; rank 0: 7.
	if got := b.pick(0.09); got != 0 {
		t.Errorf("picked rank %d, want 0", got)
	}
	// A new snapshot at 100 ms forgets the local increments: 3 vs 4.
	if got := b.pick(0.1); got != 0 {
		t.Errorf("picked rank %d after the snapshot, want 0", got)
	}
}

func genRequests(t *testing.T, cfg runresult.Config) []spec.Request {
	t.Helper()
	src, _, err := openSource(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	var rs []spec.Request
	for r, ok := src.Next(); ok; r, ok = src.Next() {
		rs = append(rs, r)
	}
	return rs
}
