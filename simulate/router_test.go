package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

func TestRouters(t *testing.T) {
	rr, err := NewRouter(runresult.RouterRoundRobin)
	if err != nil {
		t.Fatal(err)
	}
	load := []int{5, 0, 9}
	for i, want := range []int{0, 1, 2, 0, 1} {
		if got := rr.Pick(load); got != want {
			t.Errorf("round-robin pick %d: %d, want %d", i, got, want)
		}
	}
	ll, _ := NewRouter(runresult.RouterLeastLoaded)
	for _, tc := range []struct {
		load []int
		want int
	}{{[]int{5, 0, 9}, 1}, {[]int{3, 3, 3}, 0}, {[]int{4, 2, 2}, 1}, {[]int{7}, 0}} {
		if got := ll.Pick(tc.load); got != tc.want {
			t.Errorf("least-loaded %v: %d, want %d", tc.load, got, tc.want)
		}
	}
	if _, err := NewRouter("random"); err == nil {
		t.Error("unknown router accepted")
	}
}

// Least-loaded spreads a burst evenly over replicas: each ends with the
// same number of requests and none idles while another queues.
func TestLeastLoadedBalancesReplicas(t *testing.T) {
	cfg := testConfig()
	cfg.Layout.DP = 3
	cfg.Router = runresult.RouterLeastLoaded
	var rows [][3]float64
	for i := 0; i < 30; i++ {
		rows = append(rows, [3]float64{0, 500, 20})
	}
	sum, _, log, _ := simulate(t, cfg, reqs(rows...))
	for _, r := range sum.Replicas {
		if r.Steps != sum.Replicas[0].Steps {
			t.Errorf("replica steps %+v: an even burst should give equal work", sum.Replicas)
		}
	}
	if first := log.steps[0]; first.Seqs != 10 {
		t.Errorf("first step of replica %d runs %d requests, want 10 of 30", first.Replica, first.Seqs)
	}
}
