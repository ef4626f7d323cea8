package simulate

import (
	"fmt"
	"math"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// The scenario of TestPreemptionWhenBlocksRunOut with prefix caching on.
// Blocks 0-5; A takes 0, 1, 4 and B 2, 3, 5. At step 18 B (48 tokens
// computed: three full, cached blocks) is preempted and frees 5, 3, 2,
// last first; A's 4th and 5th blocks evict 5 and 3, B's tail. When A
// finishes, B finds its first block (2) still cached: its recompute
// schedules 49 - 16 = 33 tokens. Evictions: 5 and 3 by A, then A's cached
// blocks 5 and 4 by B's recompute and 1 by B's 5th block.
func TestPreemptedRequestFindsItsOwnBlocks(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.NumGPUBlocksOverride = 6
	cfg.Engine.MaxModelLen = 96
	sum, sink, log, sim := simulate(t, cfg, reqs([3]float64{0, 32, 40}, [3]float64{0, 32, 40}))
	if sum.Metrics.Preemptions != 1 || log.steps[17].Preempted != 1 {
		t.Fatalf("%d preemptions (step 18: %d), want 1 at step 18", sum.Metrics.Preemptions, log.steps[17].Preempted)
	}
	if s := log.steps[40]; s.PrefillTokens != 33 || s.Seqs != 1 {
		t.Errorf("step 41: %d prefill tokens in %d seqs, want B's recompute of 49 - 16 cached = 33", s.PrefillTokens, s.Seqs)
	}
	st := sim.engines[0].sched.prefixCacheStats()
	want := runresult.PrefixCacheStats{Enabled: true, Requests: 2, QueriedTokens: 64, PreemptedLookups: 1,
		PreemptedQueriedTokens: 49, PreemptedHitTokens: 16, Evictions: 5}
	if st != want {
		t.Errorf("prefix cache stats %+v\nwant %+v", st, want)
	}
	if b := sink.byID()[1]; b.Status != runresult.StatusCompleted || b.OutputTokens != 40 || len(log.steps) != 63 {
		t.Errorf("B %+v, %d steps; want it complete in 63 steps", b, len(log.steps))
	}
}

// Two requests share a 1000-token system prompt (62 full 16-token blocks,
// 992 tokens). B, arriving after A finished, prefills 1100 - 992 = 108
// tokens; C, arriving with A, finds the blocks A's step caches as it is
// scheduled (vLLM caches at scheduling) and prefills 108 tokens in the same
// step. D, alone later, has another system prompt and prefills all 1100.
func TestSharedPrefixHits(t *testing.T) {
	shared := func(at float64, group uint64) spec.Request {
		return spec.Request{ArrivalS: at, PromptTokens: 1100, OutputTokens: 4, PrefixGroup: group, PrefixTokens: 1000}
	}
	rs := []spec.Request{shared(0, 1), shared(0, 1), shared(5, 1), shared(10, 2)}
	for i := range rs {
		rs[i].ID = i
	}
	cfg := testConfig()
	sum, sink, log, sim := simulate(t, cfg, rs)
	if s := log.steps[0]; s.PrefillSeqs != 2 || s.PrefillTokens != 1100+108 {
		t.Fatalf("step 1: %d prefills, %d tokens; want A's 1100 and C's 108", s.PrefillSeqs, s.PrefillTokens)
	}
	for _, at := range []struct {
		s      float64
		tokens int
	}{{5, 108}, {10, 1100}} {
		i := 0
		for i < len(log.steps) && log.steps[i].StartS < at.s {
			i++
		}
		if s := log.steps[i]; s.PrefillSeqs != 1 || s.PrefillTokens != at.tokens {
			t.Fatalf("first step at %g s: %+v; want %d prefill tokens", at.s, s, at.tokens)
		}
	}
	st := sim.engines[0].sched.prefixCacheStats()
	if st.HitTokens != 2*992 || st.QueriedTokens != 4*1100 || !near(sum.Metrics.PrefixCache.HitRate, 2*992.0/4400) {
		t.Errorf("stats %+v, summary %+v", st, sum.Metrics.PrefixCache)
	}
	rows := sink.byID()
	for id, want := range map[int]int{0: 0, 1: 992, 2: 992, 3: 0} {
		if got := rows[id].CachedPromptTokens; got != want {
			t.Errorf("request %d: %d cached prompt tokens, want %d", id, got, want)
		}
	}
	if !(rows[2].TTFTMs < rows[3].TTFTMs) {
		t.Errorf("B's TTFT %g ms not below D's %g ms", rows[2].TTFTMs, rows[3].TTFTMs)
	}
}

// A whole prompt in cache still computes its last token: a 64-token prompt
// (4 blocks) repeated may hit 3 blocks, (64-1)/16, and computes 16 tokens;
// a 65-token one hits 4 and computes 1.
func TestFullHitComputesTheLastBlock(t *testing.T) {
	for _, tc := range []struct{ prompt, computed int }{{64, 16}, {65, 1}} {
		a := spec.Request{ID: 0, ArrivalS: 0, PromptTokens: tc.prompt, OutputTokens: 2, Session: 9}
		b := a
		b.ID, b.ArrivalS = 1, 1
		_, _, log, _ := simulate(t, testConfig(), []spec.Request{a, b})
		last := log.steps[len(log.steps)-2]
		if last.StartS < 1 || last.PrefillTokens != tc.computed {
			t.Errorf("prompt %d: repeat prefills %d tokens at %g s, want %d", tc.prompt, last.PrefillTokens, last.StartS, tc.computed)
		}
	}
}

// A conversation workload at equal load with prefix caching on and off:
// the hit rate matches the analytic one (every request but each system
// prompt's first finds the prompt's full blocks) within one point, and
// TTFT falls. Both runs conserve tokens and return every block.
func TestSharedPrefixWorkloadHitRate(t *testing.T) {
	const groups, users, system, question = 8, 50, 2000, 200
	cfg := testConfig()
	cfg.Workload = runresult.WorkloadConfig{Workload: "shared-prefix:groups=8,users=50,system=2000,question=200,output=64", RatePerS: 6, NumRequests: groups * users, Seed: 3}
	on := runChecked(t, cfg)
	cfg.Engine.EnablePrefixCaching = false
	off := runChecked(t, cfg)
	pc := on.sum.Metrics.PrefixCache
	blocks := system / cfg.Engine.BlockSize * cfg.Engine.BlockSize
	want := float64(groups*users-groups) * float64(blocks) / float64(groups*users*(system+question))
	if math.Abs(pc.HitRate-want) > 0.01 {
		t.Errorf("hit rate %.4f, analytic %.4f", pc.HitRate, want)
	}
	if off.sum.Metrics.PrefixCache.Enabled || off.sum.Metrics.PrefixCache.HitTokens != 0 {
		t.Errorf("caching off: %+v", off.sum.Metrics.PrefixCache)
	}
	ttftOn, ttftOff := on.sum.Metrics.TTFTMs, off.sum.Metrics.TTFTMs
	if !(ttftOn.Mean < 0.5*ttftOff.Mean && ttftOn.P99 < ttftOff.P99) {
		t.Errorf("TTFT with caching mean %.2f p99 %.2f ms, without %.2f / %.2f ms", ttftOn.Mean, ttftOn.P99, ttftOff.Mean, ttftOff.P99)
	}
	t.Logf("hit rate %.4f (analytic %.4f); TTFT mean %.2f -> %.2f ms, p99 %.2f -> %.2f ms", pc.HitRate, want, ttftOff.Mean, ttftOn.Mean, ttftOff.P99, ttftOn.P99)
	// Determinism.
	cfg.Engine.EnablePrefixCaching = true
	again := runChecked(t, cfg)
	if fmt.Sprint(again.rows) != fmt.Sprint(on.rows) || fmt.Sprintf("%+v", again.sum.Metrics) != fmt.Sprintf("%+v", on.sum.Metrics) {
		t.Error("same inputs, different results")
	}
}

// Disaggregated: the prefill instances cache prefixes, so the shared-prefix
// workload's hit rate is the analytic one there too, TTFT falls, and every
// block of every instance comes back (runChecked).
func TestDisaggregatedPrefillCachesPrefixes(t *testing.T) {
	cfg := disaggConfig(1, 1, 0, 0)
	cfg.Workload = runresult.WorkloadConfig{Workload: "shared-prefix:groups=4,users=50,system=1600,question=160,output=32", RatePerS: 6, NumRequests: 200, Seed: 5}
	on := runChecked(t, cfg)
	cfg.Engine.EnablePrefixCaching = false
	off := runChecked(t, cfg)
	want := float64(200-4) * 1600 / float64(200*1760)
	if pc := on.sum.Metrics.PrefixCache; math.Abs(pc.HitRate-want) > 0.01 {
		t.Errorf("hit rate %.4f, analytic %.4f", pc.HitRate, want)
	}
	if !(on.sum.Metrics.TTFTMs.Mean < off.sum.Metrics.TTFTMs.Mean) {
		t.Errorf("TTFT mean %g ms with caching, %g without", on.sum.Metrics.TTFTMs.Mean, off.sum.Metrics.TTFTMs.Mean)
	}
}
