package simulate

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
)

// One request alone: its TTFT is exactly its prefill step, and every later
// token takes one decode step whose context grows by one.
func TestSingleRequestTTFTIsPrefillStep(t *testing.T) {
	cfg := testConfig()
	const prompt, output = 1000, 5
	_, sink, log, _ := simulate(t, cfg, reqs([3]float64{2.5, prompt, output}))
	if len(sink.rows) != 1 || len(log.steps) != output {
		t.Fatalf("got %d rows and %d steps, want 1 and %d", len(sink.rows), len(log.steps), output)
	}
	r := sink.rows[0]
	prefill := price(t, cfg, prefillShape(prompt, 0))
	if !near(r.TTFTMs, prefill*1e3) {
		t.Errorf("TTFT %.6f ms, want the prefill step's %.6f ms", r.TTFTMs, prefill*1e3)
	}
	e2e := prefill
	for i := 1; i < output; i++ {
		e2e += price(t, cfg, decodeShape(prompt+i-1))
	}
	if !near(r.E2EMs, e2e*1e3) {
		t.Errorf("E2E %.6f ms, want prefill + %d decode steps = %.6f ms", r.E2EMs, output-1, e2e*1e3)
	}
	if want := (r.E2EMs - r.TTFTMs) / (output - 1); !near(r.TPOTMs, want) || r.MeanITLMs != r.TPOTMs {
		t.Errorf("TPOT %g, mean ITL %g, want both %g", r.TPOTMs, r.MeanITLMs, want)
	}
	if r.FirstTokenS != 2.5+prefill || r.Status != runresult.StatusCompleted {
		t.Errorf("first token at %g s (want %g), status %s", r.FirstTokenS, 2.5+prefill, r.Status)
	}
}

// Chunked prefill splits a long prompt by the token budget (and by the
// long-prefill threshold), each chunk on top of the context before it.
func TestChunkedPrefillSplitsByBudget(t *testing.T) {
	for _, tc := range []struct {
		name              string
		budget, threshold int
		chunks            []int
	}{
		{"budget 512", 512, 0, []int{512, 512, 276}},
		{"threshold 300", 8192, 300, []int{300, 300, 300, 300, 100}},
		{"budget 256 under threshold 300", 256, 300, []int{256, 256, 256, 256, 256, 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Engine.MaxNumBatchedTokens = tc.budget
			cfg.Engine.LongPrefillTokenThreshold = tc.threshold
			_, sink, log, _ := simulate(t, cfg, reqs([3]float64{0, 1300, 3}))
			var ttft float64
			ctx := 0
			for i, c := range tc.chunks {
				s := log.steps[i]
				if s.Tokens != c || s.PrefillTokens != c || s.DecodeSeqs != 0 {
					t.Fatalf("INV-2: step %d: %d tokens (%d prefill, %d decodes), want a %d-token chunk", i, s.Tokens, s.PrefillTokens, s.DecodeSeqs, c)
				}
				ttft += price(t, cfg, prefillShape(c, ctx))
				ctx += c
			}
			if next := log.steps[len(tc.chunks)]; next.DecodeSeqs != 1 || next.Tokens != 1 {
				t.Errorf("INV-2: step after the prompt: %+v, want one decode", next)
			}
			if got := sink.rows[0].TTFTMs; !near(got, ttft*1e3) {
				t.Errorf("INV-2: TTFT %.6f ms, want the sum of the chunk steps %.6f ms", got, ttft*1e3)
			}
		})
	}
}

// Running requests are scheduled before waiting ones, and the budget is
// shared: a decode goes first, a new prompt takes what is left.
func TestRunningBeforeWaiting(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.MaxNumBatchedTokens = 1000
	_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 600, 4}, [3]float64{0, 600, 4}, [3]float64{0, 900, 2}))
	want := []struct{ tokens, prefill, decodes int }{
		{1000, 1000, 0}, // A 600, B's first 400; no budget left for C
		{1000, 999, 1},  // A decodes, B's last 200 (it samples), C's first 799
		{103, 101, 2},   // A and B decode, C's last 101
		{3, 0, 3},       // all decode; A and C finish
		{1, 0, 1},       // B's last token
	}
	for i, w := range want {
		s := log.steps[i]
		if s.Tokens != w.tokens || s.PrefillTokens != w.prefill || s.DecodeSeqs != w.decodes {
			t.Errorf("step %d: %d tokens, %d prefill, %d decodes; want %d, %d, %d", i, s.Tokens, s.PrefillTokens, s.DecodeSeqs, w.tokens, w.prefill, w.decodes)
		}
	}
}

// With max_num_seqs 2 a third request waits until one finishes.
func TestMaxNumSeqsHoldsBackWaiting(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.MaxNumSeqs = 2
	_, sink, log, _ := simulate(t, cfg, reqs([3]float64{0, 100, 3}, [3]float64{0, 100, 5}, [3]float64{0, 100, 2}))
	for i, s := range log.steps {
		if s.Running > 2 || s.Seqs > 2 {
			t.Fatalf("INV-3: step %d runs %d sequences (%d running), max_num_seqs is 2", i, s.Seqs, s.Running)
		}
	}
	rows := sink.byID()
	// A finishes at the end of step 3 (prefill, 2 decodes); C is admitted at step 4.
	if rows[2].FirstTokenS != log.steps[3].EndS {
		t.Errorf("INV-3: C's first token at %g s, want the end of step 4 (%g s)", rows[2].FirstTokenS, log.steps[3].EndS)
	}
	if rows[0].FinishS != log.steps[2].EndS {
		t.Errorf("INV-3: A finished at %g s, want the end of step 3 (%g s)", rows[0].FinishS, log.steps[2].EndS)
	}
}

// Hand-worked preemption: 6 blocks of 16 tokens, two requests of 32 prompt
// and 40 output tokens. Both prefill in step 1 (2 blocks each), take a
// third block at step 2 and hold all 6 blocks; at step 18 A's 49th token
// needs a 4th block, so B (last in the running list) is preempted, with 17
// tokens out. B needs 4 blocks to recompute its 49 tokens and gets them
// only when A finishes; it then completes its 40 tokens. Without prefix
// caching (TestPreemptedRequestFindsItsOwnBlocks has it on).
func TestPreemptionWhenBlocksRunOut(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.EnablePrefixCaching = false
	cfg.Engine.NumGPUBlocksOverride = 6
	cfg.Engine.MaxModelLen = 96
	sum, sink, log, sim := simulate(t, cfg, reqs([3]float64{0, 32, 40}, [3]float64{0, 32, 40}))
	for i, s := range log.steps {
		want := 0
		if i == 17 {
			want = 1
		}
		if s.Preempted != want {
			t.Errorf("INV-4: step %d preempted %d requests, want %d", i+1, s.Preempted, want)
		}
		if s.KVBlocksUsed > 6 {
			t.Fatalf("INV-4: step %d uses %d blocks of 6", i+1, s.KVBlocksUsed)
		}
	}
	if s := log.steps[16]; s.KVBlocksUsed != 6 || s.DecodeSeqs != 2 {
		t.Errorf("INV-4: step 17: %d blocks used, %d decodes; want all 6 blocks and both decoding", s.KVBlocksUsed, s.DecodeSeqs)
	}
	if s := log.steps[17]; s.Running != 1 || s.Waiting != 1 || s.KVBlocksUsed != 4 {
		t.Errorf("INV-4: step 18: running %d, waiting %d, %d blocks; want A running on 4 blocks, B waiting", s.Running, s.Waiting, s.KVBlocksUsed)
	}
	if sum.Metrics.Preemptions != 1 || sum.Metrics.Completed != 2 {
		t.Fatalf("INV-4: %d preemptions, %d completed; want 1 and 2", sum.Metrics.Preemptions, sum.Metrics.Completed)
	}
	rows := sink.byID()
	a, b := rows[0], rows[1]
	if a.Preemptions != 0 || b.Preemptions != 1 || b.OutputTokens != 40 || b.Status != runresult.StatusCompleted {
		t.Errorf("INV-4: A %+v\nB %+v", a, b)
	}
	// A decodes alone from step 18 and finishes at step 40 (1 prefill + 39 decodes).
	if a.FinishS != log.steps[39].EndS {
		t.Errorf("INV-4: A finished at %g, want the end of step 40 (%g)", a.FinishS, log.steps[39].EndS)
	}
	// B recomputes its 49 tokens in step 41, then decodes its remaining 22 tokens.
	if s := log.steps[40]; s.PrefillTokens != 49 || s.Seqs != 1 {
		t.Errorf("INV-4: step 41: %d prefill tokens in %d seqs, want B's 49-token recompute", s.PrefillTokens, s.Seqs)
	}
	last := log.steps[len(log.steps)-1]
	if len(log.steps) != 40+1+22 || b.FinishS != last.EndS {
		t.Errorf("INV-4: %d steps, B finished at %g (last step ends %g); want 63 steps", len(log.steps), b.FinishS, last.EndS)
	}
	if b.FirstTokenS != log.steps[0].EndS || !near(b.TPOTMs, (b.E2EMs-b.TTFTMs)/39) {
		t.Errorf("INV-4: B first token %g (want %g), TPOT %g", b.FirstTokenS, log.steps[0].EndS, b.TPOTMs)
	}
	// B's gap across its preemption is one inter-token latency: the largest.
	if got := sum.Metrics.ITLMs.Count; got != 2*39 {
		t.Errorf("INV-4: %d ITL values, want 78", got)
	}
	stall := (log.steps[40].EndS - log.steps[16].EndS) * 1e3
	if got := sim.col.itl.Max(); !near(got, stall) {
		t.Errorf("INV-4: largest ITL %g ms, want B's preemption stall %g ms", got, stall)
	}
}

// TP=2 splits the same batches over two GPUs: every GPU-bound step is faster
// than at TP=1 by exactly what the cost model says, and pays two
// all-reduces. A host-bound step (the host issuing slower than the GPU
// runs) is not: TP2 issues the all-reduces too.
func TestTP2FasterByCostModel(t *testing.T) {
	load := reqs([3]float64{0, 2048, 8}, [3]float64{10, 300, 20}, [3]float64{20, 7000, 4})
	tp1, tp2 := testConfig(), testConfig()
	tp2.Layout.TP = 2
	_, _, log1, _ := simulate(t, tp1, load)
	_, _, log2, _ := simulate(t, tp2, load)
	if len(log1.steps) != len(log2.steps) {
		t.Fatalf("INV-8: %d steps at TP1, %d at TP2: spaced arrivals should give the same batches", len(log1.steps), len(log2.steps))
	}
	for i := range log1.steps {
		s1, s2 := log1.steps[i], log2.steps[i]
		if s1.Tokens != s2.Tokens || s1.DecodeSeqs != s2.DecodeSeqs {
			t.Fatalf("INV-8: step %d differs in batch: %+v vs %+v", i, s1, s2)
		}
		d1, d2 := s1.EndS-s1.StartS, s2.EndS-s2.StartS
		c1, c2 := s1.Stages[0].Cost, s2.Stages[0].Cost
		gpuBound := c1.Ms[cost.CompLaunch] < c1.DeviceMs() && c2.Ms[cost.CompLaunch] < c2.DeviceMs()
		if (gpuBound && !(d2 < d1)) || !near(d1, c1.TotalMs()/1e3) || !near(d2, c2.TotalMs()/1e3) {
			t.Errorf("INV-8: step %d: %g s at TP1, %g s at TP2; cost model %g and %g", i, d1, d2, c1.TotalMs()/1e3, c2.TotalMs()/1e3)
		}
		if c1.Ms[cost.CompTPComm] != 0 || !(c2.Ms[cost.CompTPComm] > 0) {
			t.Errorf("INV-8: step %d: all-reduce %g ms at TP1, %g ms at TP2", i, c1.Ms[cost.CompTPComm], c2.Ms[cost.CompTPComm])
		}
	}
	// The first step is the 2048-token prefill: check it against the cost model directly.
	want1, want2 := price(t, tp1, prefillShape(2048, 0)), price(t, tp2, prefillShape(2048, 0))
	if d := log1.steps[0].EndS - log1.steps[0].StartS; !near(d, want1) {
		t.Errorf("INV-8: TP1 prefill %g s, cost model %g s", d, want1)
	}
	if d := log2.steps[0].EndS - log2.steps[0].StartS; !near(d, want2) {
		t.Errorf("INV-8: TP2 prefill %g s, cost model %g s", d, want2)
	}
	t.Logf("2048-token prefill: TP1 %.3f ms, TP2 %.3f ms (x%.2f)", want1*1e3, want2*1e3, want1/want2)
}

// PP=2: a batch crosses both stages in turn (its time is the sum of the
// stage costs, the first including the activation send, less what stage
// 1's worker did while stage 0's GPU finished: TestPipelineStagesRunOwnCPUTimelines)
// and at most two batches are in flight, each stage's worker and GPU busy
// with one at a time. The requests
// arriving during the first batch join when it returns; a token budget of
// 1,000 splits them over two micro-batches.
func TestPipelineParallel(t *testing.T) {
	cfg := testConfig()
	cfg.Layout.PP = 2
	cfg.Engine.MaxNumBatchedTokens = 1000
	_, sink, log, _ := simulate(t, cfg, reqs([3]float64{0, 1000, 3}, [3]float64{0.0001, 500, 30}, [3]float64{0.0002, 200, 30}, [3]float64{0.0003, 300, 30}))
	first := log.steps[0]
	// Stage 1's hand-off is off the batch's path, and its input preparation
	// and the issue ahead of its GPU run while stage 0's GPU finishes.
	s1 := first.Stages[1].Cost
	laid, handoff := price(t, cfg, prefillShape(1000, 0)), s1.CoreBeforeMs/1e3
	lead := (s1.Ms[cost.CompHostBefore] - s1.CoreBeforeMs + s1.GPUMs() - s1.DeviceMs()) / 1e3
	if got := first.EndS - first.StartS; first.Seqs != 1 || got > laid-handoff || got < laid-handoff-lead || near(got, laid) {
		t.Errorf("first batch %g s, want stage 0 + stage 1 (%g s) less stage 1's hand-off (%g s) and up to %g s of its host work under stage 0's GPU", got, laid, handoff, lead)
	}
	if !(first.Stages[0].Cost.Ms[cost.CompPPComm] > 0) || first.Stages[1].Cost.Ms[cost.CompPPComm] != 0 {
		t.Errorf("send/recv: stage 0 %g ms, stage 1 %g ms; want it on stage 0 only", first.Stages[0].Cost.Ms[cost.CompPPComm], first.Stages[1].Cost.Ms[cost.CompPPComm])
	}
	overlapped := false
	for i, s := range log.steps {
		inFlight := 0
		for _, o := range log.steps[:i] {
			if o.EndS > s.StartS {
				inFlight++
			}
		}
		if inFlight >= 2 {
			t.Fatalf("step %d starts with %d batches in flight, PP is 2", i, inFlight)
		}
		overlapped = overlapped || inFlight == 1
		if i > 0 {
			p := log.steps[i-1]
			for st := range s.Stages {
				if s.Stages[st].StartS < p.Stages[st].CPUEndS || s.Stages[st].EndS <= p.Stages[st].EndS {
					t.Fatalf("step %d enters stage %d at %g before step %d's worker leaves it at %g (or its GPU ends first)", i, st, s.Stages[st].StartS, i-1, p.Stages[st].CPUEndS)
				}
			}
		}
	}
	if !overlapped {
		t.Error("no two batches were ever in flight together")
	}
	for _, r := range sink.rows {
		if r.Status != runresult.StatusCompleted {
			t.Errorf("request %d: %s", r.RequestID, r.Status)
		}
	}
}

// A request longer than max_model_len is rejected at arrival and counted.
func TestRejectLongerThanMaxModelLen(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.MaxModelLen = 2048
	sum, sink, _, _ := simulate(t, cfg, reqs([3]float64{0, 2000, 48}, [3]float64{0, 2000, 49}, [3]float64{1, 10, 10}))
	rows := sink.byID()
	if rows[0].Status != runresult.StatusCompleted || rows[1].Status != runresult.StatusRejected || rows[2].Status != runresult.StatusCompleted {
		t.Errorf("INV-7: statuses %s %s %s, want completed rejected completed", rows[0].Status, rows[1].Status, rows[2].Status)
	}
	if !math.IsNaN(rows[1].TTFTMs) || !math.IsNaN(rows[1].FinishS) {
		t.Errorf("INV-7: rejected request has times: %+v", rows[1])
	}
	if m := sum.Metrics; m.Arrived != 3 || m.Completed != 2 || m.Rejected != 1 {
		t.Errorf("INV-7: arrived %d, completed %d, rejected %d", m.Arrived, m.Completed, m.Rejected)
	}
}
