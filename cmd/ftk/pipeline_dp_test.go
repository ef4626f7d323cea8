package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// The main job on a data-parallel MoE layout, DP2 x EP2 at TP1 (vLLM's
// --data-parallel-size 2 --enable-expert-parallel): collect plans the
// shapes a lockstep run queries (the grouped GEMM and the exchange over
// both ranks' tokens), fit --check-coverage --dp --ep finds them covered,
// and simulate runs the two ranks in lockstep on the bundle.
func TestPipelineDataParallelEP(t *testing.T) {
	dir := t.TempDir()
	model := "qwen3-30b-a3b-tiny"
	limits := []string{"--max-num-batched-tokens", "512", "--max-num-seqs", "16", "--max-model-len", "1024"}
	step := func(name string, args ...string) string {
		t.Helper()
		out, errOut, code := ftk(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstderr: %s\nstdout: %s", name, code, errOut, out)
		}
		return out
	}
	profiles := filepath.Join(dir, "profiles")
	step("collect", join([]string{"collect", "all", "--backend", "synthetic", "--model", model, "--device", "h100", "-o", profiles,
		"--tp", "1", "--ep", "2"}, limits)...)
	dataset := filepath.Join(dir, "dataset")
	step("ingest", "ingest", profiles, "-o", dataset)
	bundle := filepath.Join(dir, "bundle.arrow")
	layout := []string{"--tp", "1", "--ep", "2", "--dp", "2"}
	out := step("fit", join([]string{"fit", dataset, "-o", bundle, "--trees", "16", "--check-coverage", "--model", model}, layout, limits)...)
	for _, want := range []string{"ep_dispatch (workers=2)", "ep_combine (workers=2)", "every operator of the simulation is inside its sampled domain"} {
		if !strings.Contains(out, want) {
			t.Errorf("fit --check-coverage lacks %q:\n%s", want, out)
		}
	}
	sim := filepath.Join(dir, "sim")
	out = step("simulate", join([]string{"simulate", "--model", model, "--device", "h100", "--bundle", bundle, "--router", "least-loaded",
		"--workload", "fixed:256x32", "--rate", "8", "--num-requests", "60", "--seed", "1", "-o", sim}, layout, limits)...)
	for _, want := range []string{"TP1/PP1/EP2/DP2", "bundle " + bundle, "60 completed", "EP communication allgather_reducescatter"} {
		if !strings.Contains(out, want) {
			t.Errorf("simulate output lacks %q:\n%s", want, out)
		}
	}
	sum, err := runresult.ReadSummary(filepath.Join(sim, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Replicas) != 2 || sum.Replicas[0].Steps+sum.Replicas[0].DummySteps != sum.Replicas[1].Steps+sum.Replicas[1].DummySteps {
		t.Errorf("ranks did not step together: %+v", sum.Replicas)
	}
	if len(sum.CostModel.RooflineFallbacks) != 0 {
		t.Errorf("the bundle lacks ops the DP layout runs: %+v", sum.CostModel.RooflineFallbacks)
	}
}
