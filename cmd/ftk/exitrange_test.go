package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A number out of its range is a usage error, exit 2 as the README's
// table says, whether typed as a flag or read from --config, with the
// flag and the range named; a panic exits 1 (a failed run), not Go's 2.
func TestOutOfRangeValuesExitUsage(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	cfg := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(cfg, []byte("model: llama-3.1-8b\nengine:\n  gpu_memory_utilization: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:10x10", "-o", "out"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "-1"}, "--rate"},
		{[]string{"--rate", "1e-300"}, "--rate"},
		{[]string{"--rate", "NaN"}, "--rate"},
		{[]string{"--rate", "-inf"}, "--rate"},
		{[]string{"--rate", "1", "--gpu-memory-utilization", "2"}, "--gpu-memory-utilization"},
		{[]string{"--rate", "1", "--num-requests", "-5"}, "--num-requests"},
		{[]string{"--clients", "-1"}, "--clients"},
		{[]string{"--rate", "3", "--stages", "60s@5"}, "--stages"},
		{[]string{"--clients", "2", "--think-time", "-1"}, "--think-time"},
		{[]string{"--rate", "1", "--mode", "disaggregated", "--kv-link-gbps", "-1"}, "--kv-link-gbps"},
		{[]string{"--rate", "1", "--max-model-len", "-1"}, "--max-model-len"},
		{[]string{"--rate", "1", "--config", cfg}, "gpu_memory_utilization"},
	} {
		_, errOut, code := ftk(t, append(append([]string{}, base...), tc.args...)...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %s", tc.args, code, errOut, exitUsage, tc.want)
		}
	}
	if _, err := os.Stat("out"); err == nil {
		t.Error("a refused command line wrote its output folder")
	}

	// A Slurm array beyond the default MaxArraySize is refused, not
	// written for sbatch to reject.
	_, errOut, code := ftk(t, "search", "--model", "llama-3.1-8b", "--workload", "fixed:1024x256", "--gpus", "h100:8",
		"--slo", "ttft_p95_ms=300,tpot_p95_ms=25", "--emit", "slurm", "--shards", "100000", "-o", "sweep")
	if code != exitUsage || !strings.Contains(errOut, "MaxArraySize 1001") {
		t.Errorf("--emit slurm --shards 100000: exit %d, stderr %q; want exit %d naming MaxArraySize", code, errOut, exitUsage)
	}

	var stderr bytes.Buffer
	code = exitOnPanic(&stderr, func() int { panic("index out of range") })
	if code != exitRuntime || !strings.Contains(stderr.String(), "internal error: index out of range") || !strings.Contains(stderr.String(), "please report") {
		t.Errorf("a panic exits %d with %q; want %d and the panic with a request to report it", code, stderr.String(), exitRuntime)
	}
}
