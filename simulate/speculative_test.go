package simulate

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// withSpec returns cfg running speculative decoding.
func withSpec(cfg runresult.Config, method string, acceptance ...float64) runresult.Config {
	cfg.Engine.SpeculativeConfig = &spec.Speculative{Method: method, NumSpeculativeTokens: len(acceptance), Acceptance: acceptance}
	return cfg
}

// K = 0 is no speculative decoding: every output file of the run is the
// run without it, byte for byte.
func TestSpeculativeK0IsTheRunWithout(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.NumGPUBlocksOverride = 800
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-code", RatePerS: 6, NumRequests: 300, Seed: 3}
	off := withSpec(cfg, spec.SpecEagle3)
	if off.Engine.SpeculativeConfig.NumSpeculativeTokens != 0 {
		t.Fatal("want K = 0")
	}
	dirs := []string{t.TempDir(), t.TempDir()}
	execute(t, cfg, dirs[0], true)
	execute(t, off, dirs[1], true)
	for _, f := range []string{runresult.RequestsCSVFile, runresult.RequestsArrowFile, runresult.SummaryFile, runresult.ConfigFile, "trace.json"} {
		a, _ := os.ReadFile(filepath.Join(dirs[0], f))
		b, _ := os.ReadFile(filepath.Join(dirs[1], f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between K = 0 and no speculative decoding", f)
		}
	}
}

// With every draft accepted each verify step appends K + 1 tokens: a
// request of O output tokens takes its prefill step and ceil((O-1)/(K+1))
// verify steps, and vLLM's metrics read acceptance 100% and length K + 1.
func TestSpeculativeFullAcceptanceGivesKPlus1Tokens(t *testing.T) {
	for _, method := range []string{spec.SpecEagle, spec.SpecEagle3, spec.SpecMTP, spec.SpecNgram} {
		const k, out = 3, 41
		cfg := withSpec(testConfig(), method, 1, 1, 1)
		var rs []spec.Request
		for i := range 8 {
			rs = append(rs, spec.Request{ID: i, ArrivalS: float64(i) * 0.5, PromptTokens: 200, OutputTokens: out})
		}
		sum, sink, log, _ := simulate(t, cfg, rs)
		sp := sum.Speculative
		if sp == nil || sp.DraftAcceptanceRate != 1 || sp.MeanAcceptanceLength != k+1 {
			t.Fatalf("%s: speculative report %+v: want acceptance 1, length %d", method, sp, k+1)
		}
		verifies := (out - 1 + k) / (k + 1)
		if want := int64(len(rs) * verifies); sp.Drafts != want {
			t.Errorf("%s: %d drafts, want %d (%d verify steps per request)", method, sp.Drafts, want, verifies)
		}
		for _, r := range sink.rows {
			if r.OutputTokens != out {
				t.Errorf("%s: request %d: %d tokens, want %d", method, r.RequestID, r.OutputTokens, out)
			}
			// One ITL per verify step (an output chunk), TPOT per token.
			if itl, tpot := r.MeanITLMs, r.TPOTMs; !(itl > 3*tpot && itl < 5*tpot) {
				t.Errorf("%s: request %d: mean ITL %.3f ms, TPOT %.3f: want ITL over K+1 = 4 tokens", method, r.RequestID, itl, tpot)
			}
		}
		for _, st := range log.steps {
			if st.DecodeSeqs > 0 && st.DecodeTokens != st.DecodeSeqs*(k+1) {
				t.Errorf("%s: step %d: %d decode tokens for %d decodes, want K + 1 = %d each", method, st.Step, st.DecodeTokens, st.DecodeSeqs, k+1)
			}
		}
	}
}

// With rejections under tight limits (a small KV cache that forces
// preemption, a small token budget, prefix caching on a workload with
// shared prefixes, two replicas) every invariant holds: tokens
// conserved, blocks returned, budget and max_num_seqs kept, at most K + 1
// tokens per decode, and the drawn acceptance matches the vector: vLLM's
// per-position rates never increase and come out as given.
func TestSpeculativeInvariantsWithRejections(t *testing.T) {
	a := []float64{0.7, 0.5, 0.3}
	for _, method := range []string{spec.SpecEagle, spec.SpecNgram} {
		cfg := withSpec(testConfig(), method, a...)
		cfg.Layout.DP = 2
		cfg.Router = runresult.RouterLeastLoaded
		cfg.Engine.MaxNumBatchedTokens = 130
		cfg.Engine.MaxNumSeqs = 96
		cfg.Engine.MaxModelLen = 4096
		cfg.Engine.NumGPUBlocksOverride = 400
		cfg.Workload = runresult.WorkloadConfig{Workload: "shared-prefix:groups=8,users=20,system=200,question=60,output=200", RatePerS: 150, NumRequests: 1500, Seed: 11}
		run := runChecked(t, cfg)
		m, sp := run.sum.Metrics, run.sum.Speculative
		if m.Preemptions == 0 || m.PrefixCache.HitTokens == 0 {
			t.Errorf("%s: %d preemptions, %d prefix-cache hit tokens: the run should exercise both", method, m.Preemptions, m.PrefixCache.HitTokens)
		}
		for i, r := range sp.AcceptanceRatePerPosition {
			if i > 0 && sp.AcceptedPerPosition[i] > sp.AcceptedPerPosition[i-1] {
				t.Errorf("INV-14: %s: position %d accepted %d times, more than position %d's %d", method, i+1, sp.AcceptedPerPosition[i], i, sp.AcceptedPerPosition[i-1])
			}
			// Truncated drafts lower the later positions' rates; the
			// first position is drafted in every draft.
			if i == 0 && math.Abs(r-a[0]) > 0.02 {
				t.Errorf("%s: position 1 acceptance rate %.4f, drawn from %.2f", method, r, a[0])
			}
		}
		var sum int64
		for _, n := range sp.AcceptedPerPosition {
			sum += n
		}
		if sum != sp.AcceptedTokens {
			t.Errorf("INV-14: %s: per-position accepted counts add to %d, accepted tokens %d", method, sum, sp.AcceptedTokens)
		}
	}
}

// Without truncation (a budget that fits every draft) the per-position
// rates and the mean acceptance length come out as the vector says:
// 1 + sum of a_i.
func TestSpeculativeAcceptanceMatchesVector(t *testing.T) {
	a := []float64{0.8, 0.55, 0.3, 0.12}
	cfg := withSpec(testConfig(), spec.SpecMTP, a...)
	cfg.Model = "deepseek-v3"
	cfg.Device, cfg.Layout = "h200", spec.Layout{TP: 8}
	cfg.Engine.ExecutionMode = runresult.ExecFullAndPiecewise
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:256x400", RatePerS: 4, NumRequests: 200, Seed: 5}
	run := runChecked(t, cfg)
	sp := run.sum.Speculative
	for i, r := range sp.AcceptanceRatePerPosition {
		if math.Abs(r-a[i]) > 0.015 {
			t.Errorf("position %d: acceptance rate %.4f, want %.2f", i+1, r, a[i])
		}
	}
	if want := spec.MeanAcceptanceLength(a, 4); math.Abs(sp.MeanAcceptanceLength-want) > 0.03 {
		t.Errorf("mean acceptance length %.3f, want %.3f", sp.MeanAcceptanceLength, want)
	}
	if sp.DrafterExecutionMode != runresult.ExecPiecewise || sp.DrafterWeightBytes <= 0 || sp.DrafterKVBytesPerToken <= 0 {
		t.Errorf("drafter: mode %q, %d weight bytes, %d KV bytes per token: want piecewise under full-and-piecewise and the MTP layer's memory",
			sp.DrafterExecutionMode, sp.DrafterWeightBytes, sp.DrafterKVBytesPerToken)
	}
}

// Same seed, same bytes; another seed draws other acceptances. A request's
// draws do not depend on its batching: the same requests at another load
// accept the same number of drafts in all.
func TestSpeculativeDeterminism(t *testing.T) {
	cfg := withSpec(testConfig(), spec.SpecEagle3, 0.7, 0.45, 0.25)
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 4, NumRequests: 300, Seed: 3}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	sums := make([]*runresult.Summary, 3)
	for i, d := range dirs {
		c := cfg
		if i == 2 {
			c.Engine.SpeculativeConfig = &spec.Speculative{Method: spec.SpecEagle3, NumSpeculativeTokens: 3, Acceptance: []float64{0.7, 0.45, 0.25}}
			c.Workload.Seed = 4
		}
		sums[i] = execute(t, c, d, false)
	}
	for _, f := range []string{runresult.RequestsCSVFile, runresult.SummaryFile, runresult.ConfigFile} {
		a, _ := os.ReadFile(filepath.Join(dirs[0], f))
		b, _ := os.ReadFile(filepath.Join(dirs[1], f))
		if !bytes.Equal(a, b) {
			t.Errorf("INV-9: %s differs between two runs with the same seed", f)
		}
	}
	if sums[0].Speculative.AcceptedTokens == sums[2].Speculative.AcceptedTokens {
		t.Errorf("INV-9: another seed accepted the same %d tokens", sums[0].Speculative.AcceptedTokens)
	}
	fast := cfg
	fast.Workload.RatePerS = 40
	other := execute(t, fast, t.TempDir(), false)
	// Drafts truncated by the budget differ with load; full drafts are
	// the same draws.
	if sums[0].Speculative.Drafts != other.Speculative.Drafts || sums[0].Speculative.AcceptedTokens != other.Speculative.AcceptedTokens {
		t.Errorf("acceptance depends on load: %d drafts, %d accepted at 4 req/s; %d, %d at 40 req/s",
			sums[0].Speculative.Drafts, sums[0].Speculative.AcceptedTokens, other.Speculative.Drafts, other.Speculative.AcceptedTokens)
	}
}

// The run's config.yaml records the speculative config with the acceptance
// it drew from, and reruns it to the same summary.
func TestSpeculativeConfigReruns(t *testing.T) {
	cfg := testConfig()
	cfg.Model, cfg.Device, cfg.Layout = "deepseek-v3", "h200", spec.Layout{TP: 8}
	cfg.Engine.SpeculativeConfig = &spec.Speculative{Method: "deepseek_mtp", NumSpeculativeTokens: 1}
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:512x64", RatePerS: 2, NumRequests: 40, Seed: 1}
	dir, dir2 := t.TempDir(), t.TempDir()
	sum := execute(t, cfg, dir, false)
	sp := sum.Speculative
	if sp.Method != spec.SpecMTP || sp.AcceptanceRecord != "mtp-deepseek-v3-report" || len(sp.Acceptance) != 1 || sp.AcceptanceSource == "" {
		t.Fatalf("speculative report %+v: want mtp from the DeepSeek-V3 record, with its source", sp)
	}
	re, err := runresult.LoadConfig(filepath.Join(dir, runresult.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if sc := re.Engine.SpeculativeConfig; sc == nil || sc.Method != spec.SpecMTP || sc.AcceptanceRecord != "mtp-deepseek-v3-report" {
		t.Fatalf("config.yaml speculative_config %+v", sc)
	}
	execute(t, re, dir2, false)
	a, _ := os.ReadFile(filepath.Join(dir, runresult.SummaryFile))
	b, _ := os.ReadFile(filepath.Join(dir2, runresult.SummaryFile))
	var sa, sb runresult.Summary
	if json.Unmarshal(a, &sa) != nil || json.Unmarshal(b, &sb) != nil || sa.Metrics.E2EMs != sb.Metrics.E2EMs || sa.Speculative.AcceptedTokens != sb.Speculative.AcceptedTokens {
		t.Errorf("the rerun from config.yaml differs: E2E %+v vs %+v", sa.Metrics.E2EMs, sb.Metrics.E2EMs)
	}
}

// Every execution mode runs speculative decoding; the drafter's passes run
// piecewise graphs only where the target's mode has them (vLLM's EAGLE
// proposer), and a step of K + 1 query tokens plus the drafter costs more
// than a plain decode step, less than K + 1 of them.
func TestSpeculativeExecutionModes(t *testing.T) {
	want := map[string]string{runresult.ExecEager: runresult.ExecEager, runresult.ExecCUDAGraph: runresult.ExecEager,
		runresult.ExecPiecewise: runresult.ExecPiecewise, runresult.ExecFullAndPiecewise: runresult.ExecPiecewise}
	for _, mode := range runresult.ExecutionModes {
		cfg := withSpec(testConfig(), spec.SpecEagle, 0.7, 0.5)
		cfg.Engine.ExecutionMode = mode
		cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:300x60", RatePerS: 4, NumRequests: 60, Seed: 2}
		base := testConfig()
		base.Engine.ExecutionMode = mode
		base.Workload = cfg.Workload
		sp, plain := runChecked(t, cfg).sum, runChecked(t, base).sum
		if got := sp.Speculative.DrafterExecutionMode; got != want[mode] {
			t.Errorf("%s: drafter runs %s, want %s", mode, got, want[mode])
		}
		// Mean step time: makespan is dominated by decode steps here.
		stepSpec := sp.Breakdown[0].WallMs / float64(sp.Breakdown[0].StageSteps)
		stepPlain := plain.Breakdown[0].WallMs / float64(plain.Breakdown[0].StageSteps)
		if !(stepSpec > stepPlain && stepSpec < 3*stepPlain) {
			t.Errorf("%s: mean step %.3f ms with speculative decoding, %.3f without: want more, and less than K+1 = 3 times", mode, stepSpec, stepPlain)
		}
		if !(sp.Metrics.TPOTMs.Mean < plain.Metrics.TPOTMs.Mean) {
			t.Errorf("%s: TPOT %.3f ms with speculative decoding at mean acceptance length %.2f, %.3f without", mode, sp.Metrics.TPOTMs.Mean, sp.Speculative.MeanAcceptanceLength, plain.Metrics.TPOTMs.Mean)
		}
	}
}

// A verify pass prices attention and GEMMs at (K+1) x requests tokens and
// the LM head at every query token; the drafter adds its passes.
func TestSpeculativeStepPricing(t *testing.T) {
	m, d := lookup(t, "llama-3.1-8b", "h100")
	cc := cost.OpCostConfig{Model: m, Layout: spec.Layout{TP: 1}, Device: d, Limits: testLimits, ExecutionMode: runresult.ExecEager}
	target, err := cost.NewOpCostModel(cc)
	if err != nil {
		t.Fatal(err)
	}
	ctxs := []int{1000, 2000, 3000, 4000}
	plain := cost.BatchShape{Tokens: 4, Seqs: 4, DecodeContexts: ctxs}
	verify := cost.BatchShape{Tokens: 16, Seqs: 4, DecodeContexts: ctxs, DecodeQueries: []int{4, 4, 4, 4}, Logits: 16}
	var cp, cv, cs cost.StepCost
	target.StageCost(&plain, 0, &cp)
	target.StageCost(&verify, 0, &cv)
	if !(cv.DeviceMs() > cp.DeviceMs()) {
		t.Errorf("verify of 16 query tokens %.4f ms, plain decode of 4 %.4f ms: want more", cv.DeviceMs(), cp.DeviceMs())
	}
	s := &spec.Speculative{Method: spec.SpecEagle, NumSpeculativeTokens: 3}
	dr, err := s.Drafter(m)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cost.NewSpecCostModel(target, cc, s, dr)
	if err != nil {
		t.Fatal(err)
	}
	sc.StageCost(&verify, 0, &cs)
	draft := cs.DeviceMs() - cv.DeviceMs()
	// Three passes of one layer of 32 (plus the LM head) cost far less than
	// the target's pass, and more than nothing.
	if !(draft > 0 && draft < cv.DeviceMs()) || cs.Kernels <= cv.Kernels || !(cs.GPUMs() > cv.GPUMs()) {
		t.Errorf("drafter adds %.4f ms device time (target %.4f), kernels %d -> %d", draft, cv.DeviceMs(), cv.Kernels, cs.Kernels)
	}
}

// The KV cache holds the drafts and the lookahead slots: a verifying
// request's blocks cover its computed tokens, its drafts and K lookahead
// slots; an n-gram run has no lookahead.
func TestSpeculativeLookaheadSlots(t *testing.T) {
	for _, tc := range []struct {
		method    string
		lookahead int32
	}{{spec.SpecEagle, 3}, {spec.SpecNgram, 0}} {
		cfg := withSpec(testConfig(), tc.method, 1, 1, 1)
		cfg.Engine.EnablePrefixCaching = false
		cfg.Engine.MaxModelLen = 4096
		cfg.Engine = resolvedEngine(t, cfg)
		s := newScheduler(cfg.Engine, 1000, NewHistogram(), func(*reqState, float64) {}, false, nil)
		s.sd = newSpecDecode(cfg.Engine.SpeculativeConfig, 1)
		s.admit(&spec.Request{ID: 0, PromptTokens: 30, OutputTokens: 100})
		var b batch
		var shape cost.BatchShape
		s.schedule(&b, &shape) // the prompt: no lookahead before anything is computed
		if r := &s.reqs[0]; r.blocks != 2 {
			t.Errorf("%s: prompt of 30 tokens holds %d blocks, want 2", tc.method, r.blocks)
		}
		s.complete(&b, 1)
		s.schedule(&b, &shape) // verify 1 + 3 drafts at 30..33, lookahead 3 more
		r := &s.reqs[0]
		if want := (r.computed + tc.lookahead + 15) / 16; r.blocks != want || r.computed != 34 {
			t.Errorf("%s: after scheduling a verify, %d computed tokens in %d blocks, want 34 in %d", tc.method, r.computed, r.blocks, want)
		}
		s.complete(&b, 2)
		if r.generated != 5 || r.computed != 34 {
			t.Errorf("%s: all accepted: %d generated, %d computed, want 5 and 34", tc.method, r.generated, r.computed)
		}
	}
}

// resolvedEngine is cfg's engine settings after Resolve.
func resolvedEngine(t *testing.T, cfg runresult.Config) runresult.EngineConfig {
	t.Helper()
	return mustResolve(t, cfg).Config().Engine
}

// The token budget counts the drafts, as vLLM's scheduler does: a request
// the budget cannot fit whole schedules fewer drafts (vLLM truncates its
// spec_token_ids), and one it cannot reach waits.
func TestSpeculativeBudgetTruncatesDrafts(t *testing.T) {
	cfg := withSpec(testConfig(), spec.SpecEagle, 1, 1, 1)
	cfg.Engine.EnablePrefixCaching = false
	cfg.Engine = resolvedEngine(t, cfg)
	cfg.Engine.MaxNumBatchedTokens = 6 // below vLLM's floor, to see the cut
	s := newScheduler(cfg.Engine, 1000, NewHistogram(), func(*reqState, float64) {}, false, nil)
	s.sd = newSpecDecode(cfg.Engine.SpeculativeConfig, 1)
	var b batch
	var shape cost.BatchShape
	for i := range 2 {
		s.admit(&spec.Request{ID: i, PromptTokens: 3, OutputTokens: 50})
	}
	s.schedule(&b, &shape) // both prompts
	s.complete(&b, 1)
	// Both have their first token and 3 drafts: 4 + 4 tokens, budget 6.
	s.schedule(&b, &shape)
	if len(b.entries) != 2 || b.entries[0].drafts != 3 || b.entries[1].drafts != 1 || b.tokens != 6 {
		t.Fatalf("entries %+v (%d tokens): want 4 tokens with 3 drafts, then 2 with 1", b.entries, b.tokens)
	}
	if len(shape.DecodeQueries) != 2 || shape.DecodeQueries[1] != 2 || shape.Logits != 6 {
		t.Errorf("shape %+v: want verify queries 4 and 2, logits at all 6", shape)
	}
	s.complete(&b, 3)
	if r := &s.reqs[1]; r.generated != 3 || r.spec != 3 {
		t.Errorf("truncated request: %d generated, %d drafts next, want 3 and 3", r.generated, r.spec)
	}
}

// vLLM sizes its CUDA graphs for the verify pass: the default largest
// capture size counts 1 + K query tokens per sequence, min(2 x
// max_num_seqs x (1 + K), 512).
func TestSpeculativeCaptureSize(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.MaxNumSeqs = 32
	cfg.Engine.ExecutionMode = runresult.ExecFullAndPiecewise
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:64x8", RatePerS: 1, NumRequests: 2, Seed: 1}
	for _, c := range []struct {
		cfg  runresult.Config
		want int
	}{{cfg, 64}, {withSpec(cfg, spec.SpecEagle, 0.5, 0.3, 0.1), 256}} {
		sum := execute(t, c.cfg, t.TempDir(), false)
		if got := sum.CostModel.MaxCaptureSize; got != c.want {
			t.Errorf("speculative %v: largest capture size %d, want %d", c.cfg.Engine.SpeculativeConfig != nil, got, c.want)
		}
	}
}

// Data-parallel MoE ranks step in lockstep with an MTP drafter: its MoE
// layer routes every rank's tokens together, as the target's do, and every
// invariant holds.
func TestSpeculativeLockstepMTP(t *testing.T) {
	cfg := withSpec(testConfig(), spec.SpecMTP, 0.8, 0.5)
	cfg.Model, cfg.Layout = "qwen3-30b-a3b", spec.Layout{TP: 1, EP: 2, DP: 2}
	cfg.Engine.ExecutionMode = runresult.ExecFullAndPiecewise
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:300x60", RatePerS: 20, NumRequests: 300, Seed: 4}
	run := runChecked(t, cfg)
	sp := run.sum.Speculative
	if sp.Drafts == 0 || math.Abs(sp.AcceptanceRatePerPosition[0]-0.8) > 0.03 {
		t.Errorf("lockstep MTP: %d drafts, per-position %v", sp.Drafts, sp.AcceptanceRatePerPosition)
	}
	base := cfg
	base.Engine.SpeculativeConfig = nil
	plain := runChecked(t, base).sum
	if !(run.sum.Metrics.TPOTMs.Mean < plain.Metrics.TPOTMs.Mean) {
		t.Errorf("lockstep MTP TPOT %.3f ms, without %.3f", run.sum.Metrics.TPOTMs.Mean, plain.Metrics.TPOTMs.Mean)
	}
}

// Disaggregated serving with speculative decoding: prefill instances run
// the prompt (their drafter too), decode instances verify; with preemption
// and async scheduling every invariant holds.
func TestSpeculativeDisaggregated(t *testing.T) {
	cfg := withSpec(disaggConfig(1, 2, 20, 50), spec.SpecEagle, 0.7, 0.4)
	cfg.Engine.MaxNumBatchedTokens = 1024
	cfg.Engine.MaxNumSeqs = 32
	cfg.Engine.MaxModelLen = 4096
	cfg.Engine.NumGPUBlocksOverride = 400
	cfg.Engine.AsyncScheduling = true
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 8, NumRequests: 800, Seed: 11}
	run := runChecked(t, cfg)
	sp := run.sum.Speculative
	if sp == nil || sp.Drafts == 0 || run.sum.Metrics.Preemptions == 0 {
		t.Fatalf("speculative report %+v, %d preemptions: want drafts verified on the decode instances, and preemption", sp, run.sum.Metrics.Preemptions)
	}
	if math.Abs(sp.AcceptanceRatePerPosition[0]-0.7) > 0.03 {
		t.Errorf("position 1 acceptance %.3f, drawn from 0.7", sp.AcceptanceRatePerPosition[0])
	}
}
