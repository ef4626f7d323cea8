package simulate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// TestResolvedBuildsAlike: one Resolved builds any number of simulations,
// and they run alike: the first (which takes the cost models Resolve
// built) and the later ones (which build their own) give byte-identical
// summaries and rows, for co-located, lockstep DP MoE and disaggregated
// runs; the resolved config is not changed by running.
func TestResolvedBuildsAlike(t *testing.T) {
	moe := testConfig()
	moe.Model, moe.Layout.TP, moe.Layout.DP, moe.Layout.EP = "qwen3-30b-a3b", 1, 4, 4
	dis := testConfig()
	dis.Mode = runresult.ModeDisaggregated
	dis.Disaggregation.DecodeInstances = 2
	for _, cfg := range []runresult.Config{testConfig(), moe, dis} {
		cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:512x64", RatePerS: 20, NumRequests: 300, Seed: 3}
		r := mustResolve(t, cfg)
		before := r.Config()
		var sums [][]byte
		var rows [][]runresult.RequestMetrics
		for i := 0; i < 3; i++ {
			var kept keepRows
			sim, err := r.New(Options{Requests: &kept})
			if err != nil {
				t.Fatal(err)
			}
			src, _, err := openSource(cfg.Workload)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := sim.Run(src)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(sum)
			if err != nil {
				t.Fatal(err)
			}
			sums, rows = append(sums, b), append(rows, kept)
		}
		for i := 1; i < len(sums); i++ {
			// %v: rows hold NaN (no KV transfer), which == never matches.
			if string(sums[i]) != string(sums[0]) || fmt.Sprint(rows[i]) != fmt.Sprint(rows[0]) {
				t.Errorf("%s %s: simulation %d of one Resolved differs from the first", cfg.Model, cfg.Mode, i+1)
			}
		}
		if !reflect.DeepEqual(r.Config(), before) {
			t.Errorf("%s %s: running changed the resolved config", cfg.Model, cfg.Mode)
		}
		if len(rows[0]) != 300 {
			t.Errorf("%s %s: %d rows, want 300", cfg.Model, cfg.Mode, len(rows[0]))
		}
	}
}
