package collect

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

// TestWorkerPythonTests runs the worker's own CPU tests
// (collect/worker/test_ftk_worker.py): the operators as vLLM writes them,
// eager and compiled modes, vLLM dispatch through a test double of vLLM's
// op signatures (a missing op is reported), the batched MoE experts and
// the protocol.
func TestWorkerPythonTests(t *testing.T) {
	t.Parallel()
	py := needTorch(t)
	cmd := exec.CommandContext(context.Background(), py, "-m", "unittest", "-v", "test_ftk_worker")
	cmd.Dir = "worker"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("worker tests: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "OK") {
		t.Fatalf("worker tests did not say OK:\n%s", out)
	}
}
