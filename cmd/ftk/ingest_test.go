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

// TestVidurKernelTimes: a Vidur mlp.csv ingests as KERNEL_ONLY (its
// profiler sums kernel durations) and fit then fits KERNEL_ONLY by
// default; ingest --measurement-type CUDA_EVENT says otherwise for files
// that do not say it.
func TestVidurKernelTimes(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join("..", "..", "testdata", "profiles", "vidur-h100")
	ds, b := filepath.Join(dir, "ds"), filepath.Join(dir, "b.arrow")
	if _, errOut, code := ftk(t, "ingest", src, "-o", ds); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}
	out, errOut, code := ftk(t, "fit", ds, "-o", b, "--trees", "4", "--folds", "2")
	if code != 0 || !strings.Contains(errOut, "fitting KERNEL_ONLY") || !strings.Contains(out, "KERNEL_ONLY") {
		t.Errorf("fit of Vidur's rows: exit %d, stderr %q; want a KERNEL_ONLY bundle", code, errOut)
	}
	ev := filepath.Join(dir, "ev")
	if _, errOut, code := ftk(t, "ingest", src, "-o", ev, "--measurement-type", "cuda_event"); code != 0 {
		t.Fatalf("ingest --measurement-type: exit %d: %s", code, errOut)
	}
	man, err := os.ReadFile(filepath.Join(ev, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(man), "mlp.CUDA_EVENT.arrow") && !strings.Contains(string(man), "linear_op.CUDA_EVENT.arrow") {
		t.Errorf("--measurement-type CUDA_EVENT: the manifest names no CUDA_EVENT operator file:\n%.600s", man)
	}
	if _, errOut, code := ftk(t, "ingest", src, "-o", filepath.Join(dir, "bad"), "--measurement-type", "wall"); code != exitUsage || !strings.Contains(errOut, "want CUDA_EVENT or KERNEL_ONLY") {
		t.Errorf("--measurement-type wall: exit %d, stderr %q", code, errOut)
	}
}
