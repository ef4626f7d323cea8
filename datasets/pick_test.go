package datasets

import (
	"path/filepath"
	"testing"
)

// TestPickArrivals checks the one arrival rule on workloads with and
// without recorded times, for 'datasets make' (ReplayRecorded) and
// 'simulate'.
func TestPickArrivals(t *testing.T) {
	load := func(spec string) Workload {
		w, err := ParseWorkload(spec)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	fixed := load("fixed:10x10")
	sampled := load("splitwise-conv") // sampled, with recorded times
	trace := load("trace:" + filepath.Join(sharedDir, "traces", "splitwise_code.csv"))
	stages := []RateStage{{DurationS: 10, RateRPS: 2}}
	for _, tc := range []struct {
		name string
		w    Workload
		c    ArrivalChoice
		want string
	}{
		{"named", fixed, ArrivalChoice{Kind: ArrivalsGamma, HasRate: true, RateRPS: 2}, ArrivalsGamma},
		{"named none", sampled, ArrivalChoice{Kind: "none", ReplayRecorded: true}, ArrivalsNone},
		{"stages", trace, ArrivalChoice{Stages: stages}, ArrivalsStages},
		{"cv", fixed, ArrivalChoice{HasCV: true, CV: 2, HasRate: true, RateRPS: 2}, ArrivalsGamma},
		{"trace with times, rate", trace, ArrivalChoice{HasRate: true, RateRPS: 2}, ArrivalsReplay},
		{"trace with times", trace, ArrivalChoice{}, ArrivalsReplay},
		{"sampled, rate", sampled, ArrivalChoice{HasRate: true, RateRPS: 2, ReplayRecorded: true}, ArrivalsPoisson},
		{"sampled, make", sampled, ArrivalChoice{ReplayRecorded: true}, ArrivalsReplay},
		{"sampled, simulate", sampled, ArrivalChoice{}, ArrivalsNone},
		{"fixed, rate", fixed, ArrivalChoice{HasRate: true, RateRPS: 2}, ArrivalsPoisson},
		{"fixed, make", fixed, ArrivalChoice{ReplayRecorded: true}, ArrivalsNone},
	} {
		a := PickArrivals(tc.w, tc.c)
		if a.Kind != tc.want || a.RateRPS != tc.c.RateRPS || a.CV != tc.c.CV || len(a.Stages) != len(tc.c.Stages) {
			t.Errorf("%s: %+v, want kind %q", tc.name, a, tc.want)
		}
	}
}
