package main

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bundlepkg "github.com/ftk-dev/ftk/bundle"
	datasetpkg "github.com/ftk-dev/ftk/dataset"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// TestPipelineEndToEnd runs the main job in a temporary folder on a small
// MoE model: collect (synthetic) -> ingest -> fit --check-coverage ->
// simulate, and checks that each artifact exists, is not empty and is read
// by the next stage.
func TestPipelineEndToEnd(t *testing.T) {
	dir := t.TempDir()
	model := "qwen3-30b-a3b-tiny"
	limits := []string{"--max-num-batched-tokens", "512", "--max-num-seqs", "16", "--max-model-len", "1024"}
	layout := []string{"--tp", "2", "--ep", "2"}
	step := func(name string, args ...string) string {
		t.Helper()
		out, errOut, code := ftk(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d\nstderr: %s\nstdout: %s", name, code, errOut, out)
		}
		return out
	}
	nonEmpty := func(path string) {
		t.Helper()
		st, err := os.Stat(path)
		if err != nil || st.Size() == 0 {
			t.Fatalf("artifact %s missing or empty: %v", path, err)
		}
	}

	profiles := filepath.Join(dir, "profiles")
	step("collect", join([]string{"collect", "all", "--backend", "synthetic", "--model", model, "--device", "h100", "-o", profiles, "--repeats", "3"}, layout, limits)...)
	csvs, _ := filepath.Glob(filepath.Join(profiles, "h100", model, "*.csv"))
	if len(csvs) < 4 {
		t.Fatalf("collect wrote %d CSV files, want linear, attention, moe, cpu and more: %v", len(csvs), csvs)
	}
	for _, f := range csvs {
		nonEmpty(f)
	}
	// Locks go when the run ends: no .NAME.ftk-lock beside any output.
	defer func() {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".ftk-lock") {
				t.Errorf("lock file left after the runs: %s", p)
			}
			return nil
		})
	}()

	dataset := filepath.Join(dir, "dataset")
	step("ingest", "ingest", profiles, "-o", dataset)
	nonEmpty(filepath.Join(dataset, "manifest.json"))

	bundle := filepath.Join(dir, "bundle.arrow")
	out := step("fit", join([]string{"fit", dataset, "-o", bundle, "--trees", "20", "--check-coverage", "--model", model}, layout, limits)...)
	nonEmpty(bundle)
	if !strings.Contains(out, "coverage") {
		t.Errorf("fit --check-coverage printed no coverage table:\n%s", out)
	}

	sim := filepath.Join(dir, "sim")
	out = step("simulate", join([]string{"simulate", "--model", model, "--device", "h100", "--bundle", bundle,
		"--workload", "fixed:256x32", "--rate", "4", "--num-requests", "50", "--seed", "1", "-o", sim}, layout, limits)...)
	for _, f := range []string{"requests.csv", "requests.arrow", "summary.json", "config.yaml"} {
		nonEmpty(filepath.Join(sim, f))
	}
	for _, want := range []string{"bundle " + bundle, "50 completed", "TTFT", "TPOT",
		"profiles      bundle fitted on SYNTHETIC profiles of h100 (the roofline device model with noise, not measured)",
		"kernels       the roofline device model, no kernel ran",
		"workload      fixed:256x32 (generated), poisson 4 req/s, 50 requests"} {
		if !strings.Contains(out, want) {
			t.Errorf("simulate output lacks %q:\n%s", want, out)
		}
	}
	// Provenance travels collect -> ingest (manifest) -> fit (bundle
	// metadata) -> simulate (summary.json).
	loaded, err := datasetpkg.Load(dataset)
	if err != nil {
		t.Fatal(err)
	}
	ds := &loaded.Manifest
	b, err := bundlepkg.Load(bundle)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := runresult.ReadSummary(filepath.Join(sim, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	synthetic := []string{spec.ProfileSynthetic}
	if !slices.Equal(ds.Backends, synthetic) || !slices.Equal(b.Meta().ProfilingBackends, synthetic) ||
		!slices.Equal(sum.CostModel.Profiles.Backends, synthetic) || sum.CostModel.Profiles.Device != "h100" {
		t.Errorf("profiling backends: manifest %v, bundle %v, summary %+v; want %v throughout", ds.Backends, b.Meta().ProfilingBackends, sum.CostModel.Profiles, synthetic)
	}
	// So do the kernel sources, row by row: the synthetic backend ran no
	// kernel.
	roofline := []string{spec.KernelSourceRoofline}
	if !slices.Equal(ds.KernelSources, roofline) || !slices.Equal(b.Meta().KernelSources, roofline) ||
		!slices.Equal(sum.CostModel.Profiles.KernelSources, roofline) {
		t.Errorf("kernel sources: manifest %v, bundle %v, summary %v; want %v throughout", ds.KernelSources, b.Meta().KernelSources, sum.CostModel.Profiles.KernelSources, roofline)
	}
	for _, s := range loaded.Samples {
		if s.KernelSource != spec.KernelSourceRoofline {
			t.Fatalf("sample %s line %d: kernel source %q", s.Source, s.Line, s.KernelSource)
		}
	}
	if w := sum.Workload; w.Source != "fixed:256x32 (generated)" || w.Arrivals != "poisson 4 req/s" || w.Requests != 50 {
		t.Errorf("summary.json workload %+v", w)
	}

	// validate calibrate re-simulates bundle runs: "measure" the same run
	// with a hidden host scale and recover it (200 evaluations).
	hidden := filepath.Join(dir, "hidden.yaml")
	if err := os.WriteFile(hidden, []byte("host_scale: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	simArgs := func(out string, extra ...string) []string {
		return join([]string{"simulate", "--model", model, "--device", "h100", "--bundle", bundle,
			"--workload", "fixed:256x32", "--rate", "4", "--num-requests", "50", "--seed", "1", "-o", out}, layout, limits, extra)
	}
	step("simulate", simArgs(filepath.Join(dir, "runs", "sim", "tiny__fixed"))...)
	step("simulate measured", simArgs(filepath.Join(dir, "runs", "meas", "tiny__fixed__r1"), "--calibration", hidden)...)
	cal := filepath.Join(dir, "calibration.yaml")
	out = step("calibrate", "validate", "calibrate", "--measured", filepath.Join(dir, "runs", "meas"),
		"--simulated", filepath.Join(dir, "runs", "sim"), "--fit-workloads", "fixed", "--params", "host_scale", "--max-evaluations", "200", "-o", cal)
	c, err := runresult.LoadCalibration(cal)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(math.Log(c.HostScale/4)) > math.Log(1.25) {
		t.Errorf("calibrated host scale x%.3f, injected x4:\n%s", c.HostScale, out)
	}
}

func join(parts ...[]string) []string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return all
}
