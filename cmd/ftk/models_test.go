package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ftk runs the command line in-process and returns stdout, stderr and the
// exit code.
func ftk(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"ftk"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func TestModelsShow(t *testing.T) {
	out, errOut, code := ftk(t, "models", "show", "qwen3-30b-a3b", "--tp", "8", "--ep", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"30.53B total", "3.35B active", "KV cache per token  24576 bytes per GPU", "TP8/PP1/EP8/DP1"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestModelsShowEverySharedConfig(t *testing.T) {
	files, err := filepath.Glob("../../testdata/models/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no model configs in testdata/models (CI needs testdata beside the repo): %v", err)
	}
	for _, f := range files {
		out, errOut, code := ftk(t, "models", "show", f)
		if code != 0 || !strings.Contains(out, "parameters") || !strings.Contains(out, "KV cache per token") {
			t.Errorf("%s: exit %d, stderr %q, stdout:\n%s", f, code, errOut, out)
		}
	}
}

func TestModelsOps(t *testing.T) {
	out, errOut, code := ftk(t, "models", "ops", "qwen3-30b-a3b", "--tp", "8", "--ep", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"attn_pre_proj", "[T,2048]x[2048,768]", "moe_grouped_gemm", "16 experts x [R,2048]x[2048,768]", "all_reduce", "layer FLOPs"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// vLLM exchanges tokens between EP ranks only with data parallelism.
	if strings.Contains(out, "ep_dispatch") {
		t.Errorf("TP8/EP8/DP1 lists an EP dispatch:\n%s", out)
	}
	out, errOut, code = ftk(t, "models", "ops", "qwen3-30b-a3b", "--tp", "1", "--ep", "8", "--dp", "8")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"ep_dispatch", "ep_combine", "[T,2048] over 8 GPUs", "16 experts x [R,2048]x[2048,768]"} {
		if !strings.Contains(out, want) {
			t.Errorf("DP8/EP8 output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadInputOneLineNonZero(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"models", "show", "gpt-17"}, `unknown model "gpt-17"`},
		{[]string{"devices", "show", "tpu-v9"}, `unknown device "tpu-v9"`},
		{[]string{"models", "show", "llama-3.1-8b", "--tp", "3"}, "TP=3 does not divide the 32 attention heads"},
		{[]string{"models", "ops", "qwen3-30b-a3b", "--tp", "8", "--ep", "3"}, "EP=3 does not divide the 128 experts"},
		{[]string{"models", "show", bad}, "missing required field hidden_size"},
		{[]string{"models", "show"}, "needs one MODEL argument"},
		{[]string{"models", "show", "--bogus", "llama-2-7b"}, "unknown flag --bogus"},
		{[]string{"devices", "list", "--bogus"}, "unknown flag --bogus"},
		{[]string{"models", "show", filepath.Join(dir, "nope.json")}, "no such file"},
	}
	for _, c := range cases {
		out, errOut, code := ftk(t, c.args...)
		if code == 0 {
			t.Errorf("%v: exit 0, want non-zero (stdout %q)", c.args, out)
		}
		if !strings.Contains(errOut, c.want) {
			t.Errorf("%v: stderr %q, want it to contain %q", c.args, errOut, c.want)
		}
		if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 {
			t.Errorf("%v: %d-line error, want one line: %q", c.args, n+1, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, code := ftk(t, "version")
	if code != 0 || !strings.HasPrefix(out, "ftk ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}
