package search

import (
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
	"github.com/ftk-dev/ftk/spec"
)

// qwenSpace is the question: Qwen3-30B-A3B on 8 H100s.
func qwenSpace(t testing.TB, useAll bool) Space {
	t.Helper()
	m, err := spec.LookupModel("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	return Space{Model: m, Pools: []Pool{{Device: "h100", GPUs: 8}}, MaxNumSeqs: []int{256}, MaxNumBatchedTokens: []int{8192},
		ExecutionModes: []string{runresult.ExecCUDAGraph}, Modes: []string{runresult.ModeColocated, runresult.ModeDisaggregated}, UseAll: useAll}
}

// The search never generates a deployment the simulator refuses for its
// layout (a MoE model's lockstep replicas with EP other than 1 or TP x DP,
// or with pipeline stages): every candidate of the 8 x H100
// Qwen3-30B-A3B space builds.
func TestEnumerateOnlyLayoutsTheSimulatorRuns(t *testing.T) {
	s := qwenSpace(t, false)
	cs, err := s.Enumerate()
	if err != nil {
		t.Fatal(err)
	}
	wide := 0
	for _, c := range cs {
		if l := c.Layout; c.Mode == runresult.ModeColocated && l.DP > 1 && l.EP > 1 {
			wide++
		}
		cfg := c.Config(runresult.DefaultConfig())
		cfg.Model = s.Model.Name
		cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:64x8", NumRequests: 8, Seed: 1, RatePerS: 1}
		if _, err := simulate.New(cfg, simulate.Options{}); err != nil {
			t.Errorf("%s: generated, but the simulator refuses it: %v", c.ID(), err)
		}
	}
	if wide == 0 {
		t.Errorf("no EP = TP x DP candidate among %d", len(cs))
	}
}

// --use-all keeps exactly the deployments that use every GPU of the pool.
func TestEnumerateUseAll(t *testing.T) {
	some := qwenSpace(t, false)
	every, err := some.Enumerate()
	if err != nil {
		t.Fatal(err)
	}
	all := qwenSpace(t, true)
	got, err := all.Enumerate()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, c := range every {
		if c.GPUs() == 8 {
			want[c.ID()] = true
		}
	}
	modes := map[string]bool{}
	for _, c := range got {
		if !want[c.ID()] {
			t.Errorf("%s (%d GPUs) kept by --use-all", c.ID(), c.GPUs())
		}
		delete(want, c.ID())
		modes[c.Mode] = true
	}
	for id := range want {
		t.Errorf("%s uses all 8 GPUs but --use-all dropped it", id)
	}
	if !modes[runresult.ModeColocated] || !modes[runresult.ModeDisaggregated] {
		t.Errorf("--use-all kept modes %v", modes)
	}
	if len(got) == 0 || len(got) >= len(every) {
		t.Errorf("--use-all: %d of %d candidates", len(got), len(every))
	}
}
