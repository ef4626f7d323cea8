package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFitCommand(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "profiles", "frontier-h800", "Qwen3-30B-A3B-tiny")
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("shared profiles missing (CI needs testdata beside the repo): %v", err)
	}
	dir := t.TempDir()
	ds, bundle := filepath.Join(dir, "ds"), filepath.Join(dir, "h800.arrow")
	if _, errOut, code := ftk(t, "ingest", src, "-o", ds); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}

	out, errOut, code := ftk(t, "fit", ds, "-o", bundle, "--trees", "8", "--report")
	if code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"model bundle: device h800, model qwen3-30b-a3b-tiny, CUDA_EVENT", "CV MAPE %", "ALL ROWS MAPE %", "NOISE FLOOR %", "wrote " + bundle, "mean MAPE over"} {
		if !strings.Contains(out, want) {
			t.Errorf("fit output lacks %q:\n%s", want, out)
		}
	}

	// A 4096-token budget on profiles sampled up to 128 tokens: exit 3,
	// every operator and range named, the collect command suggested.
	limits := []string{"--tp", "1", "--max-num-batched-tokens", "4096", "--max-num-seqs", "64", "--max-model-len", "4096"}
	out, errOut, code = ftk(t, append([]string{"fit", ds, "-o", bundle, "--trees", "8", "--check-coverage"}, limits...)...)
	if code != 3 {
		t.Errorf("--check-coverage at 4096 tokens: exit %d, want 3", code)
	}
	if !strings.Contains(errOut, "attn_pre_proj[CUDA_EVENT tp=1]: num_tokens needs [1, 4096], sampled [1, 128]") ||
		!strings.Contains(out, "ftk collect linear attention moe --model qwen3-30b-a3b-tiny --device h800 --tp 1 --max-num-batched-tokens 4096") {
		t.Errorf("coverage output:\nstdout: %s\nstderr: %s", out, errOut)
	}
	// The same check on the existing bundle, without fitting.
	out, _, code = ftk(t, append([]string{"fit", "--bundle", bundle, "--check-coverage"}, limits...)...)
	if code != 3 || strings.Contains(out, "wrote") || !strings.Contains(out, "extrapolates") {
		t.Errorf("--bundle --check-coverage: exit %d:\n%s", code, out)
	}

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"fit"}, 2, "fit needs one DATASET"},
		{[]string{"fit", ds}, 2, "fit needs -o BUNDLE"},
		{[]string{"fit", "--bundle", bundle}, 2, "takes --check-coverage"},
		{[]string{"fit", ds, "-o", bundle, "--measurement", "HOST_WALL"}, 1, "no HOST_WALL samples (it has CUDA_EVENT, KERNEL_ONLY)"},
		{[]string{"fit", filepath.Join(dir, "nope"), "-o", bundle}, 1, "not an ftk profile dataset"},
		{[]string{"fit", "--bundle", ds, "--check-coverage"}, 1, "load bundle"},
		{[]string{"fit", ds, "-o", bundle, "--repeats", "fastest"}, 2, `invalid value "fastest" for --repeats: want all or median`},
	} {
		_, errOut, code := ftk(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, want %d saying %q: %q", tc.args, code, tc.code, tc.want, errOut)
		}
	}
}
