package main

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGPUCheckScriptDryRun runs scripts/gpu-check.sh as CI can: with the
// synthetic backend on the CPU, so every step but the GPU runs (collect
// of both models' linear, attention and MoE operators, ingest, fit,
// simulate --bundle, the per-operator error table); on a machine without
// nvidia-smi the torch check stops at once, saying why.
func TestGPUCheckScriptDryRun(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("the GPU check is a bash script: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "ftk")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	script := filepath.Join("..", "..", "scripts", "gpu-check.sh")
	cmd := exec.Command("bash", script, "--backend", "synthetic", "--device", "h100", "--small", "--strict", "--out", filepath.Join(dir, "check"))
	cmd.Env = append(cmd.Environ(), "FTK="+bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"llama-3.1-8b simulate: kernels       the roofline device model, no kernel ran",
		"qwen3-30b-a3b moe_kernel_only.csv", "moe_grouped_gemm", "mlp_up_proj", "ok<=12%", "input_layernorm",
		"the MoE plan of qwen3-30b-a3b at TP1 took", "built-in device model vs measured KERNEL_ONLY rows: targets met",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		return // a GPU machine: the torch path is the real check
	}
	cmd = exec.Command("bash", script, "--out", filepath.Join(dir, "gpu"))
	cmd.Env = append(cmd.Environ(), "FTK="+bin)
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "needs a machine with an NVIDIA GPU") {
		t.Errorf("torch check without a GPU: %v\n%s", err, out)
	}
}
