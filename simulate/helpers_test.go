package simulate

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// sharedDir is testdata seen from this package's directory.
const sharedDir = "../testdata"

// memSink keeps every request row.
type memSink struct{ rows []runresult.RequestMetrics }

func (m *memSink) WriteRequest(r *runresult.RequestMetrics) error {
	m.rows = append(m.rows, *r)
	return nil
}

// byID returns the rows indexed by request ID.
func (m *memSink) byID() map[int]runresult.RequestMetrics {
	out := map[int]runresult.RequestMetrics{}
	for _, r := range m.rows {
		out[r.RequestID] = r
	}
	return out
}

// stepLog keeps a copy of every step record.
type stepLog struct{ steps []StepRecord }

func (l *stepLog) ObserveStep(r *StepRecord) {
	c := *r
	c.Stages = append([]StageSpan(nil), r.Stages...)
	l.steps = append(l.steps, c)
}

// testConfig is llama-3.1-8b on one H100 with vLLM's defaults.
func testConfig() runresult.Config {
	c := runresult.DefaultConfig()
	c.Model = "llama-3.1-8b"
	return c
}

// reqs builds requests (arrivalS, prompt, output) with IDs in order.
func reqs(rows ...[3]float64) []spec.Request {
	out := make([]spec.Request, len(rows))
	for i, r := range rows {
		out[i] = spec.Request{ID: i, ArrivalS: r[0], PromptTokens: int(r[1]), OutputTokens: int(r[2])}
	}
	return out
}

// simulate runs cfg on rs and returns the summary, the request rows and the
// steps.
func simulate(t *testing.T, cfg runresult.Config, rs []spec.Request) (*runresult.Summary, *memSink, *stepLog, *Simulation) {
	t.Helper()
	sink, log := &memSink{}, &stepLog{}
	sim, err := New(cfg, Options{Requests: sink, Observer: log})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sim.Run(NewSliceSource(rs))
	if err != nil {
		t.Fatal(err)
	}
	return sum, sink, log, sim
}

// price is the cost model's time of one step of shape b on every stage, in
// seconds, for cfg (routing draws differ from a run's: use even routing to
// compare MoE steps).
func price(t *testing.T, cfg runresult.Config, b cost.BatchShape) float64 {
	t.Helper()
	m, err := spec.LookupModel(cfg.Model)
	if err != nil {
		t.Fatal(err)
	}
	d, err := spec.LookupDevice(cfg.Device)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cost.NewOpCostModel(cost.OpCostConfig{Model: m, Layout: cfg.Layout.Normalize(), Device: d, Limits: cfg.Engine.EngineLimits, Calibration: cfg.Calibration,
		ExecutionMode: cfg.Engine.ExecutionMode, MaxCaptureSize: cost.MaxCaptureSize(cfg.Engine.MaxCUDAGraphCaptureSize, cfg.Engine.EngineLimits), MoE: cfg.MoE})
	if err != nil {
		t.Fatal(err)
	}
	var total float64
	for s := 0; s < cfg.Layout.Normalize().PP; s++ {
		var c cost.StepCost
		cm.StageCost(&b, s, &c)
		total += c.TotalMs() / 1e3
	}
	return total
}

func prefillShape(chunk, ctx int) cost.BatchShape {
	return cost.BatchShape{Tokens: chunk, Seqs: 1, PrefillChunks: []int{chunk}, PrefillContexts: []int{ctx}}
}

func decodeShape(ctxs ...int) cost.BatchShape {
	return cost.BatchShape{Tokens: len(ctxs), Seqs: len(ctxs), DecodeContexts: ctxs}
}

// near reports whether a and b agree to 1e-9 relative (float rounding of
// times that are sums of step costs).
func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// checkedRun is one simulation of cfg's workload whose every step is checked
// against the engine limits (checkSteps) and whose requests are kept.
type checkedRun struct {
	sum   *runresult.Summary
	rows  []runresult.RequestMetrics
	asked map[int]int // request ID -> output tokens asked for
	sim   *Simulation
	check *checkSteps
}

// runChecked opens cfg.Workload, runs it and checks conservation.
func runChecked(t *testing.T, cfg runresult.Config) checkedRun {
	t.Helper()
	src, n, err := openSource(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	rs := make([]spec.Request, 0, n)
	asked := map[int]int{}
	for r, ok := src.Next(); ok; r, ok = src.Next() {
		asked[r.ID] = r.OutputTokens
		rs = append(rs, r)
	}
	if len(rs) != n {
		t.Fatalf("source gave %d of %d requests", len(rs), n)
	}
	sink := &memSink{}
	check := &checkSteps{t: t, cfg: cfg.Engine}
	sim, err := New(cfg, Options{Requests: sink, Observer: check})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sim.Run(NewSliceSource(rs))
	if err != nil {
		t.Fatal(err)
	}
	checkConservation(t, sum, sink.rows, asked, sim)
	// Every token a step computes is a prompt token not found in the cache
	// or an output token fed back (all but the last), unless preemption
	// made some be computed again.
	var want int64
	for _, r := range sink.rows {
		if r.Status == runresult.StatusCompleted {
			if r.CachedPromptTokens < 0 || r.CachedPromptTokens >= r.PromptTokens {
				t.Fatalf("request %d: %d of %d prompt tokens cached", r.RequestID, r.CachedPromptTokens, r.PromptTokens)
			}
			want += int64(r.PromptTokens - r.CachedPromptTokens - r.HostCachedPromptTokens + r.OutputTokens - 1)
		}
	}
	if sp := sum.Speculative; sp != nil {
		// The verify steps also compute the drafts they reject, and the
		// drafts accepted past a request's last token (at most K each).
		want += sp.DraftTokens - sp.AcceptedTokens
		extra := check.tokens - want
		if sum.Metrics.Preemptions == 0 && (extra < 0 || extra > int64(sp.NumSpeculativeTokens*sum.Metrics.Completed)) {
			t.Errorf("INV-14: steps computed %d tokens; uncached prompt, fed-back output and rejected draft tokens are %d (%d accepted past the end, at most K=%d per request)",
				check.tokens, want, extra, sp.NumSpeculativeTokens)
		}
	} else if sum.Metrics.Preemptions == 0 && cfg.Mode != runresult.ModeDisaggregated && check.tokens != want {
		t.Errorf("steps computed %d tokens; uncached prompt plus fed-back output tokens are %d", check.tokens, want)
	}
	if pc := sum.Metrics.PrefixCache; pc.Enabled && pc.QueriedTokens != sum.Metrics.PromptTokens {
		t.Errorf("prefix cache queried %d prompt tokens, the completed requests have %d", pc.QueriedTokens, sum.Metrics.PromptTokens)
	}
	return checkedRun{sum: sum, rows: sink.rows, asked: asked, sim: sim, check: check}
}

// lookup returns the catalog model and device.
func lookup(t *testing.T, model, device string) (*spec.Model, *spec.Device) {
	t.Helper()
	m, err := spec.LookupModel(model)
	if err != nil {
		t.Fatal(err)
	}
	d, err := spec.LookupDevice(device)
	if err != nil {
		t.Fatal(err)
	}
	return m, d
}

var testLimits = spec.EngineLimits{MaxNumBatchedTokens: 8192, MaxNumSeqs: 256, MaxModelLen: 8192, BlockSize: spec.DefaultBlockSize}

// openSource opens w's arrivals as the command line does (datasets.OpenRun).
func openSource(w runresult.WorkloadConfig) (Source, int, error) {
	return datasets.OpenRun(w.Trace, w.Workload, w.RatePerS, w.NumRequests, w.Seed)
}

// mustResolve resolves cfg (Resolve) or fails the test.
func mustResolve(tb testing.TB, cfg runresult.Config) *Resolved {
	tb.Helper()
	r, err := Resolve(cfg, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
