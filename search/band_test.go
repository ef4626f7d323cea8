package search

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/publicrun"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// A candidate's error band is the largest |error| of ftk on the held-out
// published runs of its class (family, device, execution mode) over the
// metrics its SLO rests on and the throughput, read from the replays'
// table (publicrun.Errors, kept current by TestPublicRuns); a class
// without a held-out run widens to any device, then any mode; fitted runs
// never count.
func TestErrorBand(t *testing.T) {
	errs, err := publicrun.Errors()
	if err != nil {
		t.Fatal(err)
	}
	largest := func(match func(e publicrun.MeasuredError) bool, metrics ...string) (pct float64, runs int) {
		seen := map[string]bool{}
		for _, e := range errs {
			for _, m := range metrics {
				if e.Metric == m && e.Role == publicrun.RoleHeldOut && match(e) {
					pct = max(pct, math.Abs(e.ErrorPct))
					seen[e.Run] = true
				}
			}
		}
		return pct, len(seen)
	}
	dense := smallSettings(t, testSLO, 1) // llama-3.1-8b, TTFT and TPOT targets
	qwen, err := spec.LookupModel("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	moe := dense
	moe.Space.Model = qwen
	moe.SLO, _ = ParseSLO("tpot_p95_ms=50")
	for _, tc := range []struct {
		name         string
		s            Settings
		device, mode string
		class        string
		match        func(e publicrun.MeasuredError) bool
		metrics      []string
	}{
		{"dense on h100", dense, "h100", runresult.ExecCUDAGraph, "dense, h100, cuda-graph",
			func(e publicrun.MeasuredError) bool {
				return !e.MoE && e.Device == "h100" && e.ExecutionMode == runresult.ExecCUDAGraph
			},
			[]string{"ttft_mean_ms", "tpot_mean_ms", "itl_p50_ms", "output_tok_s"}},
		{"MoE on h100: TPOT only", moe, "h100", runresult.ExecCUDAGraph, "MoE, h100, cuda-graph",
			func(e publicrun.MeasuredError) bool {
				return e.MoE && e.Device == "h100" && e.ExecutionMode == runresult.ExecCUDAGraph
			},
			[]string{"tpot_mean_ms", "itl_p50_ms", "output_tok_s"}},
		{"dense on a device without runs", dense, "l40s", runresult.ExecCUDAGraph, "dense, any device, cuda-graph",
			func(e publicrun.MeasuredError) bool { return !e.MoE && e.ExecutionMode == runresult.ExecCUDAGraph },
			[]string{"ttft_mean_ms", "tpot_mean_ms", "itl_p50_ms", "output_tok_s"}},
		{"MoE eager: its only run is fitted", moe, "h100", runresult.ExecEager, "MoE, any device and mode",
			func(e publicrun.MeasuredError) bool { return e.MoE },
			[]string{"tpot_mean_ms", "itl_p50_ms", "output_tok_s"}},
	} {
		b, err := newBands(&tc.s)
		if err != nil {
			t.Fatal(err)
		}
		got := b.of(Candidate{Device: tc.device, ExecutionMode: tc.mode})
		want, runs := largest(tc.match, tc.metrics...)
		if runs == 0 || got.Pct != want || got.Runs != runs || got.Class != tc.class {
			t.Errorf("%s: band %+v, want ±%g%% over %d runs of %s", tc.name, got, want, runs, tc.class)
		}
	}
}
