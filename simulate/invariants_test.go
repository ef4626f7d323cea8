package simulate

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// checkSteps fails on any step that breaks the engine limits.
type checkSteps struct {
	t      *testing.T
	cfg    runresult.EngineConfig
	steps  int
	tokens int64
}

func (c *checkSteps) ObserveStep(r *StepRecord) {
	if !r.Dummy {
		c.steps++
	}
	c.tokens += int64(r.Tokens)
	e := c.cfg
	switch {
	case r.Tokens > e.MaxNumBatchedTokens:
		c.t.Fatalf("INV-2: replica %d step %d: %d tokens, budget %d", r.Replica, r.Step, r.Tokens, e.MaxNumBatchedTokens)
	case r.Seqs > e.MaxNumSeqs || r.Running > e.MaxNumSeqs:
		c.t.Fatalf("INV-3: replica %d step %d: %d sequences, %d running, max_num_seqs %d", r.Replica, r.Step, r.Seqs, r.Running, e.MaxNumSeqs)
	case r.KVBlocksUsed > r.KVBlocksTotal:
		c.t.Fatalf("INV-4: replica %d step %d: %d KV blocks of %d", r.Replica, r.Step, r.KVBlocksUsed, r.KVBlocksTotal)
	case r.Tokens != r.PrefillTokens+r.DecodeTokens || r.Seqs != r.PrefillSeqs+r.DecodeSeqs ||
		r.DecodeTokens < r.DecodeSeqs || (e.SpeculativeConfig == nil && r.DecodeTokens != r.DecodeSeqs):
		c.t.Fatalf("INV-2: replica %d step %d: tokens %d != %d prefill + %d decode tokens (%d decodes)", r.Replica, r.Step, r.Tokens, r.PrefillTokens, r.DecodeTokens, r.DecodeSeqs)
	case e.SpeculativeConfig != nil && r.DecodeTokens > r.DecodeSeqs*(1+e.SpeculativeConfig.NumSpeculativeTokens):
		c.t.Fatalf("INV-14: replica %d step %d: %d decode tokens in %d decodes, more than 1 + K = %d each", r.Replica, r.Step, r.DecodeTokens, r.DecodeSeqs, 1+e.SpeculativeConfig.NumSpeculativeTokens)
	case e.LongPrefillTokenThreshold > 0 && r.PrefillTokens > r.PrefillSeqs*e.LongPrefillTokenThreshold:
		c.t.Fatalf("INV-2: replica %d step %d: %d prefill tokens in %d sequences over the threshold %d", r.Replica, r.Step, r.PrefillTokens, r.PrefillSeqs, e.LongPrefillTokenThreshold)
	}
}

// checkConservation checks that every arrival is accounted for, every
// token produced, every block returned, and Little's law.
func checkConservation(t *testing.T, sum *runresult.Summary, rows []runresult.RequestMetrics, asked map[int]int, sim *Simulation) {
	t.Helper()
	m := sum.Metrics
	if m.Arrived != len(asked) || m.Completed+m.Rejected != m.Arrived || len(rows) != m.Arrived {
		t.Fatalf("INV-1: arrived %d (sent %d), completed %d, rejected %d, rows %d", m.Arrived, len(asked), m.Completed, m.Rejected, len(rows))
	}
	var out int64
	var e2e float64
	seen := map[int]bool{}
	for _, r := range rows {
		if seen[r.RequestID] {
			t.Fatalf("INV-1: request %d reported twice", r.RequestID)
		}
		seen[r.RequestID] = true
		if r.Status != runresult.StatusCompleted {
			continue
		}
		if r.OutputTokens != asked[r.RequestID] {
			t.Fatalf("INV-1: request %d: %d output tokens, asked %d", r.RequestID, r.OutputTokens, asked[r.RequestID])
		}
		if !(r.ArrivalS <= r.FirstTokenS && r.FirstTokenS <= r.FinishS) {
			t.Fatalf("INV-5: request %d: arrival %g, first token %g, finish %g out of order", r.RequestID, r.ArrivalS, r.FirstTokenS, r.FinishS)
		}
		out += int64(r.OutputTokens)
		e2e += r.E2EMs / 1e3
	}
	if out != m.OutputTokens {
		t.Errorf("INV-1: rows hold %d output tokens, summary %d", out, m.OutputTokens)
	}
	for _, e := range sim.engines {
		s := e.sched
		if s.pc != nil {
			checkPool(t, s.pc)
			for b, n := range s.pc.ref {
				if n != 0 {
					t.Fatalf("INV-4: replica %d: block %d ends with %d references", e.id, b, n)
				}
			}
		}
		if s.freeBlocks != s.totalBlocks || len(s.running) != 0 || s.waiting.len() != 0 || s.outstanding() != 0 {
			t.Errorf("INV-4: replica %d ends with %d of %d blocks free, %d running, %d waiting", e.id, s.freeBlocks, s.totalBlocks, len(s.running), s.waiting.len())
		}
	}
	little := m.RequestThroughputPerS * (e2e / float64(m.Completed))
	if math.Abs(m.MeanConcurrency-little)/little > 0.02 {
		t.Errorf("INV-6: Little's law: mean concurrency %g, throughput x mean E2E %g", m.MeanConcurrency, little)
	}
	t.Logf("%d requests, %d steps, %d preemptions; mean concurrency %.3f vs throughput x E2E %.3f", m.Arrived, m.Steps, m.Preemptions, m.MeanConcurrency, little)
}

// A long randomized run with tight limits: two replicas, a small KV cache
// (so requests are preempted), a small token budget and long-prefill
// threshold, lengths sampled from the Splitwise conversation trace.
func TestRandomizedRunInvariants(t *testing.T) {
	cfg := testConfig()
	cfg.Layout.DP = 2
	cfg.Router = runresult.RouterLeastLoaded
	cfg.Engine.MaxNumBatchedTokens = 512
	cfg.Engine.MaxNumSeqs = 24
	cfg.Engine.LongPrefillTokenThreshold = 384
	cfg.Engine.MaxModelLen = 4096
	cfg.Engine.NumGPUBlocksOverride = 600
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 5, NumRequests: 4000, Seed: 7}
	run := runChecked(t, cfg)
	sum, check := run.sum, run.check
	if int64(check.steps) != sum.Metrics.Steps {
		t.Errorf("observed %d steps, summary says %d", check.steps, sum.Metrics.Steps)
	}
	if sum.Metrics.Preemptions == 0 || sum.Metrics.Rejected == 0 {
		t.Errorf("%d preemptions, %d rejections: the run should exercise both", sum.Metrics.Preemptions, sum.Metrics.Rejected)
	}
	if sum.Replicas[0].Steps == 0 || sum.Replicas[1].Steps == 0 {
		t.Errorf("a replica never ran: %+v", sum.Replicas)
	}
}

// The real Splitwise conversation trace replayed on llama-3.1-8b at TP1.
func TestSplitwiseConvTrace(t *testing.T) {
	cfg := testConfig()
	cfg.Workload = runresult.WorkloadConfig{Trace: sharedDir + "/traces/splitwise_conv.csv"}
	run := runChecked(t, cfg)
	if n := len(run.asked); n != 19366 {
		t.Fatalf("trace has %d requests, want 19366", n)
	}
	// One request (14,089 tokens) exceeds the default max_model_len of 8192.
	if run.sum.Metrics.Rejected != 1 {
		t.Errorf("%d rejected, want 1", run.sum.Metrics.Rejected)
	}
}

// The per-step hot path (scheduling, pricing, completing, metrics) does not
// allocate once the run is warm: for a dense model, and for an MoE model
// whose routing tables for the run's token counts are built.
func TestStepDoesNotAllocate(t *testing.T) {
	moe := testConfig()
	moe.Model, moe.Layout = "qwen3-30b-a3b", spec.Layout{TP: 8, EP: 8}
	moe.MoE = runresult.MoEConfig{Routing: runresult.RoutingSkewed, All2AllBackend: spec.All2AllPPLX}
	moe.Engine.AsyncScheduling = true
	sd := withSpec(testConfig(), spec.SpecEagle3, 0.7, 0.5, 0.3)
	sd.Engine.ExecutionMode = runresult.ExecFullAndPiecewise
	for _, cfg := range []runresult.Config{testConfig(), moe, sd} {
		cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:300x40", RatePerS: 50, NumRequests: 100000, Seed: 1}
		src, _, err := openSource(cfg.Workload)
		if err != nil {
			t.Fatal(err)
		}
		sim, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		sim.src = src
		sim.scheduleNext()
		for i := 0; i < 50000; i++ {
			sim.loop.Step()
		}
		before := sim.engines[0].steps
		if allocs := testing.AllocsPerRun(20000, func() { sim.loop.Step() }); allocs != 0 {
			t.Errorf("INV-11: %s: %g allocations per event", cfg.Model, allocs)
		}
		if sim.engines[0].steps-before < 1000 || sim.err != nil {
			t.Errorf("INV-11: %s: only %d steps measured (err %v)", cfg.Model, sim.engines[0].steps-before, sim.err)
		}
	}
}
