package simulate

import (
	"cmp"
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/publicrun"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// validationDoc is the page TestPublicRuns writes (make validation) and
// keeps current.
const validationDoc = "../docs/validation.md"

// errorsFile is the errors of the same replays as a table
// (publicrun.Errors), which search's error bands read.
const errorsFile = "../publicrun/" + publicrun.ErrorsFile

// publicRuns are the records of publicrun, every one.
func publicRuns(t *testing.T) []publicrun.Run {
	t.Helper()
	runs, err := publicrun.Load()
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// publicRunNamed is the record called name.
func publicRunNamed(t *testing.T, name string) publicrun.Run {
	t.Helper()
	for _, r := range publicRuns(t) {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no public run named %q in publicrun/runs", name)
	return publicrun.Run{}
}

// runConfig is the configuration r is replayed with: vLLM's defaults
// otherwise.
func runConfig(r publicrun.Run) runresult.Config {
	s := r.Setup
	cfg := runresult.DefaultConfig()
	cfg.Model, cfg.Device, cfg.Layout = s.Model, s.Device, spec.Layout{TP: s.TP}
	if strings.HasSuffix(s.Model, ".json") {
		cfg.Model = "../" + s.Model // config.json paths are from the repository root
	}
	if s.EP > 0 {
		cfg.Layout.EP = s.EP
	}
	if s.DP > 0 {
		cfg.Layout.DP = s.DP
	}
	if s.MaxNumSeqs > 0 {
		cfg.Engine.MaxNumSeqs = s.MaxNumSeqs
	}
	if s.GPUMemoryUtilization > 0 {
		cfg.Engine.GPUMemoryUtilization = s.GPUMemoryUtilization
	}
	cfg.Engine.NumGPUBlocksOverride = s.NumGPUBlocksOverride
	if s.Router != "" {
		cfg.Router = s.Router
	}
	cfg.Engine.ExecutionMode = s.ExecutionMode
	if s.MaxNumBatchedTokens > 0 {
		cfg.Engine.MaxNumBatchedTokens = s.MaxNumBatchedTokens
	}
	if s.MaxModelLen > 0 {
		cfg.Engine.MaxModelLen = s.MaxModelLen
	}
	cfg.Engine.AsyncScheduling = s.AsyncScheduling
	cfg.Engine.EnableChunkedPrefill = !s.NoChunkedPrefill
	cfg.Engine.EnablePrefixCaching = !s.NoPrefixCaching
	if s.SpeculativeConfig != nil {
		sc := *s.SpeculativeConfig
		cfg.Engine.SpeculativeConfig = &sc
	}
	return cfg
}

// replayRun simulates r under cfg: closed-loop clients as the CLI's
// --clients runs them (fixed lengths, seed 1), requests gapS apart, every
// request at once, or Poisson arrivals.
func replayRun(t *testing.T, cfg runresult.Config, r publicrun.Run) (*runresult.Summary, *memSink, *stepLog) {
	t.Helper()
	w := r.Workload
	switch w.Kind {
	case "spaced":
		rows := make([][3]float64, w.Requests)
		for i := range rows {
			rows[i] = [3]float64{float64(i) * w.GapS, float64(w.Prompt), float64(w.Output)}
		}
		sum, sink, log, _ := simulate(t, cfg, reqs(rows...))
		return sum, sink, log
	case "at-once":
		rows := make([][3]float64, len(w.Prompts))
		for i, out := range w.Outputs {
			rows[i] = [3]float64{0, float64(w.Prompts[i]), float64(max(out, 1))} // an empty reply runs as one token
		}
		sum, sink, log, _ := simulate(t, cfg, reqs(rows...))
		return sum, sink, log
	case "trace":
		rs, err := datasets.ReadTrace("../" + w.Trace)
		if err != nil {
			t.Fatal(err)
		}
		sum, sink, log, _ := simulate(t, cfg, rs)
		return sum, sink, log
	case "poisson":
		wl, err := datasets.ParseWorkload(fmt.Sprintf("fixed:%dx%d", w.Prompt, w.Output))
		if err != nil {
			t.Fatal(err)
		}
		rs, err := datasets.Generate(wl, datasets.Arrivals{Kind: datasets.ArrivalsPoisson, RateRPS: w.RateRPS}, int(w.DurationS*w.RateRPS), w.Seed)
		if err != nil {
			t.Fatal(err)
		}
		sum, sink, log, _ := simulate(t, cfg, rs)
		return sum, sink, log
	}
	wl, err := datasets.ParseWorkload(fmt.Sprintf("fixed:%dx%d", w.Prompt, w.Output))
	if err != nil {
		t.Fatal(err)
	}
	src, err := datasets.NewClients(wl, datasets.Arrivals{}, w.Clients, w.Requests, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	sink, log := &memSink{}, &stepLog{}
	sim, err := New(cfg, Options{Requests: sink, Observer: log})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sim.Run(src)
	if err != nil {
		t.Fatal(err)
	}
	return sum, sink, log
}

// traceMeasured is each metric of a trace's own vLLM server timestamps
// (queued_s, first_token_s, last_token_s, seconds): mean TTFT (queued to
// first token), mean TPOT ((last - first) / (output - 1) over requests of
// more than one output token), mean E2E (queued to last token) and output
// throughput (output tokens over first queued to last token).
func traceMeasured(t *testing.T, path string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	num := func(row []string, name string) float64 {
		i, ok := col[name]
		if !ok {
			t.Fatalf("%s: no column %q", path, name)
		}
		v, err := strconv.ParseFloat(row[i], 64)
		if err != nil {
			t.Fatalf("%s: column %q: %v", path, name, err)
		}
		return v
	}
	var ttft, tpot, e2e, out float64
	var n, nTPOT int
	first, last := math.Inf(1), math.Inf(-1)
	for _, row := range rows[1:] {
		q, ft, lt, o := num(row, "queued_s"), num(row, "first_token_s"), num(row, "last_token_s"), num(row, "num_decode_tokens")
		ttft += ft - q
		e2e += lt - q
		if o > 1 {
			tpot += (lt - ft) / (o - 1)
			nTPOT++
		}
		out += o
		n++
		first, last = math.Min(first, q), math.Max(last, lt)
	}
	return map[string]float64{
		"ttft_mean_ms": 1e3 * ttft / float64(n),
		"tpot_mean_ms": 1e3 * tpot / float64(nTPOT),
		"e2e_mean_ms":  1e3 * e2e / float64(n),
		"output_tok_s": out / (last - first),
	}
}

// ftkMetric is metric (a publicrun metric name) of a simulation.
func ftkMetric(t *testing.T, sum *runresult.Summary, metric string) float64 {
	t.Helper()
	m := sum.Metrics
	switch metric {
	case "tpot_mean_ms":
		return m.TPOTMs.Mean
	case "ttft_mean_ms":
		return m.TTFTMs.Mean
	case "itl_p50_ms":
		return m.ITLMs.P50
	case "e2e_mean_ms":
		return m.E2EMs.Mean
	case "output_tok_s":
		return m.OutputTokenThroughputPerS
	}
	t.Fatalf("metric %q is not one ftk reports", metric)
	return 0
}

// replayMetrics replays r under cfg and returns ftk's figure of each
// metric r measures: the summary's, and speedup (output throughput with
// cfg's speculative decoding over the same run's without it, replayed
// again with none).
func replayMetrics(t *testing.T, cfg runresult.Config, r publicrun.Run) map[string]float64 {
	t.Helper()
	sum, _, _ := replayRun(t, cfg, r)
	got := map[string]float64{}
	for m := range r.Measured {
		if m != "speedup" {
			got[m] = ftkMetric(t, sum, m)
			continue
		}
		base := cfg
		base.Engine.SpeculativeConfig = nil
		none, _, _ := replayRun(t, base, r)
		got[m] = sum.Metrics.OutputTokenThroughputPerS / none.Metrics.OutputTokenThroughputPerS
	}
	return got
}

// publicResult is one run replayed: ftk's figure of each measured metric.
type publicResult struct {
	run publicrun.Run
	ftk map[string]float64
}

// TestPublicRuns replays every published run of publicrun/runs on the
// built-in device model, holds each measured metric to its record's bound
// (and, where the record says so, ftk to at most max_above_pct above the
// measurement), and checks that docs/validation.md is the table these
// replays give. FTK_UPDATE_DOCS=1 (make validation) writes it instead.
func TestPublicRuns(t *testing.T) {
	var results []publicResult
	for _, r := range publicRuns(t) {
		if r.Workload.Kind == "trace" {
			// The record's measurements are the trace's own: checked, so
			// they cannot be typed wrong.
			from := traceMeasured(t, "../"+r.Workload.Trace)
			for m, v := range r.Measured {
				if math.Abs(publicrun.ErrorPct(v, from[m])) > 0.01 {
					t.Errorf("%s: measured %s %g, but its trace %s gives %g", r.Name, m, v, r.Workload.Trace, from[m])
				}
			}
		}
		res := publicResult{run: r, ftk: replayMetrics(t, runConfig(r), r)}
		for _, m := range publicrun.Metrics {
			want, ok := r.Measured[m]
			if !ok {
				continue
			}
			got := res.ftk[m]
			e := publicrun.ErrorPct(got, want)
			t.Logf("%-22s %-8s %s measured %.2f, ftk %.2f (%+.1f%%); %s", r.Name, r.Role, m, want, got, e, r.Source.URL)
			if math.Abs(e) > r.MaxErrorPct[m] {
				t.Errorf("%s (%s): ftk %s %.2f, measured %.2f: %+.1f%%, beyond %.0f%%", r.Name, r.Role, m, got, want, e, r.MaxErrorPct[m])
			}
			if above, ok := r.MaxAbovePct[m]; ok && e > above {
				t.Errorf("%s: ftk's %s %.2f is %+.1f%% above the measured %.2f: this run is not over-predicted (at most %+.0f%%)", r.Name, m, got, e, want, above)
			}
		}
		results = append(results, res)
	}
	var errs []publicrun.MeasuredError // what search's error bands read
	for _, res := range results {
		cfg := runConfig(res.run)
		model, err := spec.LookupModel(cfg.Model)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range publicrun.Metrics {
			if got, ok := res.ftk[m]; ok {
				errs = append(errs, publicrun.MeasuredError{Run: res.run.Name, Role: res.run.Role, MoE: model.IsMoE(), Device: cfg.Device,
					ExecutionMode: cmp.Or(cfg.Engine.ExecutionMode, runresult.ExecCUDAGraph), Metric: m, ErrorPct: publicrun.ErrorPct(got, res.run.Measured[m])})
			}
		}
	}
	for path, doc := range map[string]string{validationDoc: validationTable(results), errorsFile: publicrun.ErrorsTable(errs)} {
		if os.Getenv("FTK_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(have) != doc {
			t.Errorf("%s is stale: run make validation (it writes what these replays give)", path)
		}
	}
}
