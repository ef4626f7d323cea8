package simulate

import (
	"math"
	"sort"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// publicPoint is a published end-to-end TPOT the host timeline is checked
// against (README.md, "Host timeline: calibration").
type publicPoint struct {
	name, source string
	fit          bool // the point spec.IssueScale was fitted on
	model        string
	device       string
	tp           int
	mode         string
	maxSeqs      int
	batched      int
	requests     int
	prompt, out  int
	gapS         float64 // between arrivals; 0: all at once (a concurrency limit)
	async        bool    // vLLM's async scheduling, on by default in the run's vLLM
	tpotMs       float64 // measured mean TPOT
	// maxErrPct bounds ftk's error: 15 on the fitted point; on held-out
	// points a regression guard a few points above the error README.md
	// reports, not a target (#45709 graphs' target is 15%).
	maxErrPct float64
}

var publicPoints = []publicPoint{
	// vLLM issue #45709 (June 2026): Qwen3-30B-A3B, TP4 on RTX 4090 D,
	// 3,500 in / 1,500 out, --max-concurrency 8, request rate inf; vLLM
	// V1's defaults below 70 GiB of GPU memory (2,048 batched tokens).
	// max_num_seqs 8 with every request queued at once is the client's
	// concurrency limit (a request starts when one finishes, as vllm bench
	// serve's closed loop does; TPOT does not see the queueing). Decode
	// batches of 8 replay the size-8 graph, unpadded. Routing is the
	// default (skewed, Zipf 0.2). Async scheduling is on: vLLM made it the
	// default in late 2025 (PR #27614, listed done in the "Async
	// Scheduling Plan", vLLM issue #27679; vLLM's Q4 2025 roadmap "Async
	// Scheduling on by default"), before the issue's June 2026 runs.
	{"#45709 eager", "github.com/vllm-project/vllm/issues/45709", true,
		"qwen3-30b-a3b", "rtx4090d", 4, cost.ExecEager, 8, 2048, 32, 3500, 1500, 0, true, 33.92, 15},
	{"#45709 graphs", "github.com/vllm-project/vllm/issues/45709 (FULL_AND_PIECEWISE)", false,
		"qwen3-30b-a3b", "rtx4090d", 4, cost.ExecCUDAGraph, 8, 2048, 32, 3500, 1500, 0, true, 10.03, 60},
	// vllm-omni issue #7960 (September 2026): Qwen2.5-Omni-7B thinker (a
	// Qwen2.5-7B LLM) on one A800, requests one after another; thinker
	// TPOT ~22-23 ms eager, ~13 ms with CUDA graphs. Prompt and output
	// lengths are not given: 600 / 200 tokens assumed.
	{"#7960 thinker eager", "github.com/vllm-project/vllm-omni/issues/7960", false,
		"testdata/qwen2.5-omni-7b-thinker.json", "a800", 1, cost.ExecEager, 256, 8192, 3, 600, 200, 60, false, 22.5, 50},
	{"#7960 thinker graphs", "github.com/vllm-project/vllm-omni/issues/7960", false,
		"testdata/qwen2.5-omni-7b-thinker.json", "a800", 1, cost.ExecCUDAGraph, 256, 8192, 3, 600, 200, 60, false, 13, 15},
}

// TestHostTimelinePublicPoints simulates each public point with the
// default issue costs and reports ftk's error. Each point stays within its
// bound (15% on the fitted one); every eager run must be slower than its
// graph run and the eager #45709 run host-bound, as measured.
func TestHostTimelinePublicPoints(t *testing.T) {
	tpot := map[string]float64{}
	for _, p := range publicPoints {
		cfg := runresult.DefaultConfig()
		cfg.Model, cfg.Device, cfg.Layout = p.model, p.device, spec.Layout{TP: p.tp}
		cfg.Engine.ExecutionMode = p.mode
		cfg.Engine.MaxNumSeqs, cfg.Engine.MaxNumBatchedTokens = p.maxSeqs, p.batched
		cfg.Engine.AsyncScheduling = p.async
		rows := make([][3]float64, p.requests)
		for i := range rows {
			rows[i] = [3]float64{float64(i) * p.gapS, float64(p.prompt), float64(p.out)}
		}
		sum, sink, log, _ := simulate(t, cfg, reqs(rows...))
		got := sum.Metrics.TPOTMs.Mean
		tpot[p.name] = got
		errPct := 100 * (got - p.tpotMs) / p.tpotMs
		role := "held out"
		if p.fit {
			role = "fitted"
		}
		bound := 0
		for _, s := range log.steps {
			if c := s.Stages[0].Cost; c.Ms[cost.CompLaunch] > c.DeviceMs() {
				bound++
			}
		}
		ttftMs := sum.Metrics.TTFTMs.Mean
		if p.gapS == 0 {
			ttftMs = closedLoopTTFTMs(sink.rows, p.maxSeqs)
		}
		t.Logf("%-22s %-8s measured TPOT %6.2f ms, ftk %6.2f ms (%+.1f%%; mean TTFT %.1f ms), %d%% of steps host-bound; %s",
			p.name, role, p.tpotMs, got, errPct, ttftMs, 100*bound/max(len(log.steps), 1), p.source)
		if math.Abs(errPct) > p.maxErrPct {
			t.Errorf("%s (%s): ftk TPOT %.2f ms, measured %.2f ms: %+.1f%%, beyond %.0f%%", p.name, role, got, p.tpotMs, errPct, p.maxErrPct)
		}
		if p.name == "#45709 eager" && bound < len(log.steps)*9/10 {
			t.Errorf("%s: %d of %d steps host-bound, want nearly all", p.name, bound, len(log.steps))
		}
	}
	for _, pair := range [][2]string{{"#45709 eager", "#45709 graphs"}, {"#7960 thinker eager", "#7960 thinker graphs"}} {
		if !(tpot[pair[0]] > tpot[pair[1]]) {
			t.Errorf("%s TPOT %.2f ms not above %s %.2f ms", pair[0], tpot[pair[0]], pair[1], tpot[pair[1]])
		}
	}
}

// BLIS's trained-physics latency model (inference-sim,
// docs/guide/latency-models.md, fitted on vLLM v0.15.1 step traces on
// H100 with CUDA graphs) has a per-step fixed overhead of about 126 us and
// 4 us per request. ftk's nearest figure is the host time around a
// one-sequence CUDA-graph decode step of Llama-3.1-8B on an H100 (host
// before and after, the replay); the test reports it and checks it stays
// within a factor of three of BLIS's (different fits of different runs).
func TestHostStepOverheadVsBLIS(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.ExecutionMode = cost.ExecCUDAGraph
	_, _, log, _ := simulate(t, cfg, reqs([3]float64{0, 100, 4}))
	c := log.steps[len(log.steps)-1].Stages[0].Cost
	overheadUs := (c.Ms[cost.CompHostBefore] + c.Ms[cost.CompHostAfter] + c.Ms[cost.CompLaunch]) * 1e3
	const blisUs = 126 + 4
	t.Logf("host overhead of a 1-sequence graph decode step: ftk %.0f us, BLIS beta7 + beta6 %d us (%+.0f%%)", overheadUs, blisUs, 100*(overheadUs-blisUs)/blisUs)
	if overheadUs < blisUs/3 || overheadUs > 3*blisUs {
		t.Errorf("ftk's per-step host overhead %.0f us is more than 3x away from BLIS's fitted %d us", overheadUs, blisUs)
	}
}

// closedLoopTTFTMs is the mean TTFT a closed-loop client with slots
// requests in flight sees (vllm bench serve --max-concurrency): request i
// is sent when the (i-slots)-th request to finish has finished, not when
// the simulation queued it.
func closedLoopTTFTMs(rows []runresult.RequestMetrics, slots int) float64 {
	byID := append([]runresult.RequestMetrics(nil), rows...)
	sort.Slice(byID, func(i, j int) bool { return byID[i].RequestID < byID[j].RequestID })
	finish := make([]float64, len(rows))
	for i, r := range rows {
		finish[i] = r.FinishS
	}
	sort.Float64s(finish)
	var sum float64
	for i, r := range byID {
		sentS := r.ArrivalS
		if i >= slots {
			sentS = math.Max(sentS, finish[i-slots])
		}
		sum += (r.FirstTokenS - sentS) * 1e3
	}
	return sum / float64(max(len(byID), 1))
}
