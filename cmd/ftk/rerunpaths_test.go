package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// A run's config.yaml names its files (trace, bundle, histogram) so that
// it reruns from any working directory: a run given a relative --trace,
// rerun with --config from another folder, replays the same trace and
// writes the same requests.
func TestConfigReRunsFromAnotherDirectory(t *testing.T) {
	root := t.TempDir()
	trace, err := filepath.Abs("../../testdata/traces/splitwise_conv.csv")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(filepath.Join(work, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "traces", "t.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(work)
	if _, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--trace", "traces/t.csv", "--num-requests", "50", "-o", "out"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	cfg, err := runresult.LoadConfig(filepath.Join(work, "out", runresult.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(cfg.Workload.Trace) {
		t.Errorf("config.yaml names the trace %q, relative to a working directory a rerun may not have", cfg.Workload.Trace)
	}
	t.Chdir(root)
	if _, errOut, code := ftk(t, "simulate", "--config", filepath.Join("work", "out", runresult.ConfigFile), "-o", "again"); code != 0 {
		t.Fatalf("rerun from another directory: exit %d: %s", code, errOut)
	}
	a, _ := os.ReadFile(filepath.Join(work, "out", runresult.RequestsCSVFile))
	b, _ := os.ReadFile(filepath.Join(root, "again", runresult.RequestsCSVFile))
	if len(a) == 0 || string(a) != string(b) {
		t.Errorf("the rerun wrote other requests (%d and %d bytes)", len(a), len(b))
	}
	if c := runresult.DefaultConfig(); !strings.Contains(runresult.Config{Bundle: "b/x.arrow", Model: c.Model}.WithAbsolutePaths().Bundle, string(filepath.Separator)+"b"+string(filepath.Separator)+"x.arrow") {
		t.Error("a relative bundle path stays relative")
	}
}
