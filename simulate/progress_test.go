package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// TestProgressCountsFinished: Options.Progress reports requests finished
// (completed or rejected), not arrived: in an offline batch every request
// arrives at t=0, so the first report, after 16,384 events, is far below
// the total, the reports never go back, and the last is the total.
func TestProgressCountsFinished(t *testing.T) {
	cfg := testConfig()
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:16x4", NumRequests: 20000, Seed: 1}
	src, total, err := openSource(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	sum, err := Execute(mustResolve(t, cfg), src, Outputs{Dir: t.TempDir()}, Options{Progress: func(finished int, _ float64) { got = append(got, finished) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < 2 || got[0] > total/2 || got[len(got)-1] != total || sum.Metrics.Completed+sum.Metrics.Rejected != total {
		t.Fatalf("progress reports %v for %d requests (%d completed, %d rejected)", got, total, sum.Metrics.Completed, sum.Metrics.Rejected)
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("progress went back: %v", got)
		}
	}
}
