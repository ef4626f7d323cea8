package publicrun

import (
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// Every record loads, names a source and bounds what it measures; exactly
// the runs something was fitted on say so.
func TestLoad(t *testing.T) {
	runs, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 16 {
		t.Fatalf("%d runs, want at least the 16 the tests replay", len(runs))
	}
	fitted := 0
	for _, r := range runs {
		if r.Role == RoleFitted {
			fitted++
		}
	}
	if fitted != 1 {
		t.Errorf("%d fitted runs, want 1 (#45709 eager's TPOT, for roofline.IssueScale)", fitted)
	}
}

// A record that could not be replayed or checked is refused, saying why.
func TestCheckRefuses(t *testing.T) {
	good := func() Run {
		return Run{Name: "x", Role: RoleHeldOut,
			Source:      Source{Title: "t", URL: "u", Date: "2025"},
			Setup:       Setup{Model: "llama-3.1-8b", Device: "h100", TP: 1},
			Workload:    Workload{Kind: "clients", Clients: 1, Requests: 1, Prompt: 1, Output: 1},
			Measured:    map[string]float64{"tpot_mean_ms": 10},
			MaxErrorPct: map[string]float64{"tpot_mean_ms": 10}}
	}
	if err := good().check(); err != nil {
		t.Fatalf("a good record is refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Run)
		want string
	}{
		{"no date", func(r *Run) { r.Source.Date = "" }, "date"},
		{"unknown role", func(r *Run) { r.Role = "tuned" }, "role"},
		{"fitted without what", func(r *Run) { r.Role = RoleFitted }, "fitted_what"},
		{"unknown metric", func(r *Run) { r.Measured["tpot_p99_ms"] = 3 }, "not one of"},
		{"unbounded metric", func(r *Run) { r.Measured["ttft_mean_ms"] = 3 }, "max_error_pct"},
		{"bound without measurement", func(r *Run) { r.MaxErrorPct["e2e_mean_ms"] = 3 }, "not measured"},
		{"zero measurement", func(r *Run) { r.Measured["tpot_mean_ms"] = 0 }, "want > 0"},
		{"unknown workload", func(r *Run) { r.Workload.Kind = "replay" }, "workload kind"},
		{"trace without path", func(r *Run) { r.Workload.Kind = "trace" }, "needs trace"},
		{"at-once lengths", func(r *Run) { r.Workload = Workload{Kind: "at-once", Prompts: []int{1, 2}, Outputs: []int{1}} }, "one length"},
		{"speedup without speculation", func(r *Run) { r.Measured["speedup"], r.MaxErrorPct["speedup"] = 2, 10 }, "speculative_config"},
		{"speculation without K", func(r *Run) { r.Setup.SpeculativeConfig = &spec.Speculative{Method: "eagle3"} }, "num_speculative_tokens"},
		{"unknown method", func(r *Run) { r.Setup.SpeculativeConfig = &spec.Speculative{Method: "medusa", NumSpeculativeTokens: 2} }, "speculative method"},
		{"rising acceptance", func(r *Run) {
			r.Setup.SpeculativeConfig = &spec.Speculative{Method: "ngram", NumSpeculativeTokens: 2, Acceptance: []float64{0.3, 0.4}}
		}, "never increase"},
	} {
		r := good()
		tc.edit(&r)
		if err := r.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}
