package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/collect"
)

// The end-to-end check: a synthetic sweep of Qwen3-30B-A3B on
// TP8/EP8 ingests, and the fitted predictors cover the simulation's query
// domain for the same engine limits.
func TestCollectSyntheticIngestFitCoverage(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := ftk(t, "collect", "all", "--backend", "synthetic", "--model", "qwen3-30b-a3b", "--device", "h100",
		"--tp", "8", "--ep", "8", "-o", dir)
	if code != 0 {
		t.Fatalf("collect exit %d: %s", code, errOut)
	}
	sweep := filepath.Join(dir, "h100", "qwen3-30b-a3b")
	if !strings.Contains(out, "0 failed") || !strings.Contains(out, sweep) {
		t.Errorf("collect output: %s", out)
	}
	ds := filepath.Join(dir, "ds")
	if _, errOut, code := ftk(t, "ingest", sweep, "-o", ds); code != 0 {
		t.Fatalf("ingest exit %d: %s", code, errOut)
	}
	out, errOut, code = ftk(t, "fit", ds, "-o", filepath.Join(dir, "bundle.arrow"), "--trees", "8", "--folds", "2",
		"--check-coverage", "--model", "qwen3-30b-a3b", "--tp", "8", "--ep", "8",
		"--max-num-batched-tokens", "8192", "--max-num-seqs", "256", "--max-model-len", "4096")
	if code != 0 {
		t.Fatalf("fit --check-coverage exit %d:\n%s\n%s", code, out, errOut)
	}
}

// The torch worker on the CPU (Debian's python3-torch in CI) measures a
// few shapes of every family through the command line, and ftk ingest
// reads its rows; --ep 4 over --tp 2 is a data-parallel layout (DP2), so
// the EP exchange is measured too. It fails without PyTorch rather than
// skipping.
func TestCollectTorchCPUIngests(t *testing.T) {
	if _, _, err := collect.FindPython(context.Background(), ""); err != nil {
		t.Fatalf("this test runs the torch worker: %v", err)
	}
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny-moe.json")
	os.WriteFile(model, []byte(`{"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
	 "hidden_size": 256, "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4,
	 "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "max_position_embeddings": 512,
	 "num_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 128}`), 0o644)
	out, errOut, code := ftk(t, "collect", "all", "--backend", "torch", "--device-kind", "cpu", "--model", model,
		"--tp", "2", "--ep", "4", "--max-num-batched-tokens", "8", "--max-num-seqs", "2", "--max-model-len", "8",
		"--warmup", "1", "--repeats", "2", "--threads", "1", "--kernels", "eager", "-o", dir)
	if code != 0 || !strings.Contains(out, "0 failed") {
		t.Fatalf("collect exit %d: %s\n%s", code, out, errOut)
	}
	sweep := filepath.Join(dir, "cpu", "tiny-moe")
	for _, f := range []string{"linear_op_cpu.csv", "attention_cpu.csv", "moe_cpu.csv", "cpu_overhead.csv", "network/all_reduce_cpu.csv", "network/ep_dispatch_cpu.csv"} {
		if _, err := os.Stat(filepath.Join(sweep, f)); err != nil {
			t.Error(err)
		}
	}
	out, errOut, code = ftk(t, "ingest", sweep, "--device", "cpu", "-o", filepath.Join(dir, "ds"))
	if code != 0 || !strings.Contains(out+errOut, "excluded 0 whole rows and 0 operator cells") || !strings.Contains(out+errOut, "device cpu, torch-cpu profiles,") {
		t.Fatalf("ingest exit %d:\n%s\n%s", code, out, errOut)
	}
	// The rows name their kernels (--kernels eager: plain PyTorch, and
	// F.linear for the GEMMs, the call vLLM makes); fit's summary says
	// what the bundle predicts.
	out, errOut, code = ftk(t, "fit", filepath.Join(dir, "ds"), "--measurement", "CPU", "--model", model, "--trees", "5", "-o", filepath.Join(dir, "b.arrow"))
	if code != 0 || !strings.Contains(out+errOut, "kernels: plain PyTorch, not vLLM's kernels (torch.nn.functional.linear+torch:qk_norm, torch:attn_decode") ||
		!strings.Contains(out+errOut, "; vLLM's kernels (torch.Tensor.view, torch.nn.functional.embedding, torch.nn.functional.linear)") {
		t.Errorf("fit exit %d: want the kernels line:\n%s\n%s", code, out, errOut)
	}
}

func TestCollectPlanOnly(t *testing.T) {
	out, errOut, code := ftk(t, "collect", "moe", "collectives", "--model", "qwen3-30b-a3b", "--device", "h100", "--tp", "8", "--ep", "8", "--plan-only")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"moe", "collectives", "EST. GPU TIME", "total", "coverage: the plan samples every feature range"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "attention") {
		t.Errorf("plan of moe and collectives lists attention:\n%s", out)
	}
}

func TestCollectEmit(t *testing.T) {
	out, errOut, code := ftk(t, "collect", "all", "--model", "llama-3.1-8b", "--device", "h100", "--tp", "2", "--emit", "slurm", "--shards", "3", "--binary", "/opt/ftk/bin/ftk")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"#SBATCH --array=0-2", "#SBATCH --gpus-per-node=2", "/opt/ftk/bin/ftk collect all", "--model llama-3.1-8b", "--tp 2", `--shard "${SLURM_ARRAY_TASK_ID}/3"`} {
		if !strings.Contains(out, want) {
			t.Errorf("script lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--binary") {
		t.Errorf("the job passes --binary on:\n%s", out)
	}
	// The synthetic backend needs no GPU, and the default binary is this one.
	out, _, code = ftk(t, "collect", "all", "--backend", "synthetic", "--model", "llama-3.1-8b", "--device", "h100", "--emit", "slurm", "--shards", "4")
	exe, _ := os.Executable()
	if code != 0 || strings.Contains(out, "gpus") || !strings.Contains(out, exe+" collect all") {
		t.Errorf("synthetic sweep (exit %d): want no GPU request and %s:\n%s", code, exe, out)
	}
	out, _, code = ftk(t, "collect", "linear", "--model", "llama-3.1-8b", "--device", "h100", "--emit", "k8s", "--shards", "2")
	if code != 0 || !strings.Contains(out, "completionMode: Indexed") || !strings.Contains(out, `${JOB_COMPLETION_INDEX}/2`) || !strings.Contains(out, "exec ftk collect linear") {
		t.Errorf("k8s (exit %d):\n%s", code, out)
	}
}

func TestCollectBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"collect", "--model", "qwen3-30b-a3b"}, 2, "needs a family"},
		{[]string{"collect", "gemm", "--model", "qwen3-30b-a3b"}, 2, `unknown family "gemm"`},
		{[]string{"collect", "linear"}, 2, "needs --model"},
		{[]string{"collect", "linear", "--model", "gpt-5"}, 2, "--model"},
		{[]string{"collect", "linear", "--model", "qwen3-30b-a3b", "--device", "tpu"}, 2, "--device"},
		{[]string{"collect", "linear", "--model", "qwen3-30b-a3b", "--tp", "3"}, 2, "TP=3"},
		{[]string{"collect", "linear", "--model", "qwen3-30b-a3b", "--shard", "3/3"}, 2, "--shard"},
		{[]string{"collect", "linear", "--model", "qwen3-30b-a3b", "--max-model-len", "1"}, 2, "max_model_len"},
		{[]string{"collect", "moe", "--model", "qwen3-30b-a3b", "--gating-context", "warm"}, 2, "--gating-context"},
		{[]string{"collect", "moe", "--model", "qwen3-30b-a3b", "--measurements", "wall"}, 2, "--measurements"},
		{[]string{"collect", "linear", "--model", "qwen3-30b-a3b", "--emit", "slurm", "--shard", "0/2"}, 2, "drop --shard"},
		{[]string{"collect", "linear", "--model", "qwen3-30b-a3b", "--backend", "synthetic", "-o", dir}, 1, "needs a device"},
	} {
		_, errOut, code := ftk(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	// A broken file in the output folder is named, with its line.
	sweep := filepath.Join(dir, "h100", "qwen3-30b-a3b")
	if _, errOut, code := ftk(t, "collect", "linear", "--backend", "synthetic", "--model", "qwen3-30b-a3b", "--device", "h100", "-o", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f := filepath.Join(sweep, "linear_op.csv")
	data, _ := os.ReadFile(f)
	lines := strings.SplitN(string(data), "\n", 4)
	os.WriteFile(f, []byte(lines[0]+"\n"+lines[1]+"\n1,2,3\n"+lines[3]), 0o644)
	_, errOut, code := ftk(t, "collect", "linear", "--backend", "synthetic", "--model", "qwen3-30b-a3b", "--device", "h100", "-o", dir)
	if code != 1 || !strings.Contains(errOut, f) || !strings.Contains(errOut, "line 3") {
		t.Errorf("broken CSV: exit %d, %q", code, errOut)
	}
	// Without a driver, torch on cuda is refused with a way out.
	if nv, err := collect.OpenNVML(); err == nil {
		nv.Close()
	} else if errors.Is(err, collect.ErrNoDriver) {
		_, errOut, code := ftk(t, "collect", "linear", "--backend", "torch", "--model", "qwen3-30b-a3b", "--device", "h100", "-o", dir)
		if code != 1 || !strings.Contains(errOut, "no NVIDIA driver found") || !strings.Contains(errOut, "--device-kind cpu") {
			t.Errorf("torch without a driver: exit %d, %q", code, errOut)
		}
	}
}
