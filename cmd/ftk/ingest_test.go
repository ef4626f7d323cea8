package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIngestCommand(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "profiles", "vidur-h100")
	if _, err := os.Stat(src); err != nil {
		t.Fatalf("shared profiles missing (CI needs testdata beside the repo): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "ds")
	_, errOut, code := ftk(t, "ingest", src, "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"all_reduce.csv: collective/vidur_network CUDA_EVENT (defaulted), device h100 (path)", "wrote " + dir + ": device h100, gpu profiles, 15410 samples"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("report lacks %q:\n%s", want, errOut)
		}
	}
	out, errOut, code := ftk(t, "ingest", "--summary", dir)
	if code != 0 || !strings.Contains(out, "send_recv") || !strings.Contains(out, "size_bytes") {
		t.Errorf("summary exit %d:\n%s%s", code, out, errOut)
	}

	// Bad input: one line naming file:line:column, non-zero exit.
	bad := filepath.Join(t.TempDir(), "h100", "linear_op.csv")
	os.MkdirAll(filepath.Dir(bad), 0o755)
	os.WriteFile(bad, []byte("time_stats.emb.min,time_stats.emb.max,time_stats.emb.mean,time_stats.emb.median,time_stats.emb.std,num_tokens,num_tensor_parallel_workers,measurement_type\n"+
		"0.1,0.2,0.15,0.15,0.01,16,1,CUDA_EVENT\n0.1,0.2,0.15,0.15,0.01,32,1,KERNEL_ONLY\n"), 0o644)
	_, errOut, code = ftk(t, "ingest", bad, "-o", filepath.Join(t.TempDir(), "x"))
	if code == 0 || !strings.Contains(errOut, bad+":3:8: measurement_type KERNEL_ONLY differs") || strings.Count(errOut, "\n") != 1 {
		t.Errorf("mixed measurement types: exit %d: %q", code, errOut)
	}
	_, errOut, code = ftk(t, "ingest", bad)
	if code != 2 || !strings.Contains(errOut, "-o DIR") {
		t.Errorf("missing -o: exit %d: %q", code, errOut)
	}
}
