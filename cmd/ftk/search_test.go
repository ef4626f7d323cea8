package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// searchArgs is a small search: llama-3.1-8b on two H100s.
func searchArgs(out string, extra ...string) []string {
	return append([]string{"search", "--model", "llama-3.1-8b", "--workload", "fixed:1024x128", "--num-requests", "300",
		"--gpus", "h100:2", "--slo", "ttft_p95_ms=300,tpot_p95_ms=12", "--max-num-seqs", "32,256", "--max-num-batched-tokens", "2048,8192",
		"--execution-modes", "cuda-graph", "--rate-tolerance", "0.05", "--top", "3", "-o", out}, extra...)
}

func TestSearchCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	out, errOut, code := ftk(t, searchArgs(dir)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"RANK", "REQ/S/GPU", "ttft_p95_ms", "\n     1 ", "\n     3 ", "pruned below the top 3", "rerun the best: ftk simulate --config " + dir} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Off a terminal (stderr is a buffer here) progress comes as log lines.
	if !strings.Contains(errOut, "candidates (100%) in ") || !strings.Contains(errOut, "to go\n") {
		t.Errorf("stderr has no progress lines:\n%s", errOut)
	}
	if strings.Contains(out, "\n     4 ") {
		t.Errorf("more than --top 3 ranked:\n%s", out)
	}
	csv, err := os.ReadFile(filepath.Join(dir, "results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) < 10 || !strings.HasPrefix(lines[1], "1,") && !strings.Contains(string(csv), "\n1,") {
		t.Fatalf("results.csv:\n%s", csv)
	}
	// The best candidate's config.yaml reruns it: same latency as ranked.
	i := strings.Index(out, "ftk simulate --config ")
	cfg := strings.Fields(out[i+len("ftk simulate --config "):])[0]
	sim, errOut, code := ftk(t, "simulate", "--config", cfg, "-o", filepath.Join(t.TempDir(), "rerun"))
	if code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, errOut)
	}
	var best []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "1" {
			best = f
		}
	}
	ttft := best[len(best)-2]
	// The ranking shows 4 significant digits, the rerun's table 2
	// decimals: the two agree within half a unit of each one's last
	// digit (re-rounding the table's value to 4 digits can land the
	// other side of a tie: 231.25 shown for a ranked 231.3).
	ranked, err := strconv.ParseFloat(ttft, 64)
	if err != nil {
		t.Fatalf("ranked TTFT P95 %q: %v", ttft, err)
	}
	unit := 1.0
	if i := strings.IndexByte(ttft, '.'); i >= 0 {
		unit = math.Pow(10, -float64(len(ttft)-i-1))
	}
	simP95 := math.NaN()
	for _, l := range strings.Split(sim, "\n") {
		if f := strings.Fields(l); len(f) == 6 && f[0] == "TTFT" {
			simP95, _ = strconv.ParseFloat(f[4], 64)
		}
	}
	if !(math.Abs(simP95-ranked) <= unit/2+0.005) {
		t.Errorf("rerun of %s does not show the ranked TTFT P95 %s:\n%s", cfg, ttft, sim)
	}
	// Again: everything is already searched, and the report is the same.
	out2, errOut, code := ftk(t, searchArgs(dir)...)
	if code != 0 || out2 != out || !strings.Contains(errOut, "already searched") {
		t.Errorf("second run (exit %d) differs or searched again: %s\n%s", code, errOut, out2)
	}
}

func TestSearchEmit(t *testing.T) {
	out, errOut, code := ftk(t, searchArgs("/shared/search", "--emit", "slurm", "--shards", "4", "--binary", "/opt/ftk")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"#SBATCH --array=0-3", "/opt/ftk search --model llama-3.1-8b", "--output /shared/search", "--rate-tolerance 0.05", `--shard "${SLURM_ARRAY_TASK_ID}/4"`, "without --shard"} {
		if !strings.Contains(out, want) {
			t.Errorf("script lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "--gpus-per-node") || strings.Contains(out, "--emit") {
		t.Errorf("a search job requests GPUs or emits again:\n%s", out)
	}
	out, _, code = ftk(t, searchArgs("/shared/search", "--emit", "k8s", "--shards", "2")...)
	if code != 0 || !strings.Contains(out, "completionMode: Indexed") || !strings.Contains(out, "--output /ftk-out") || !strings.Contains(out, "exec ftk search") {
		t.Errorf("k8s (exit %d):\n%s", code, out)
	}
}

func TestSearchBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"search", "--gpus", "h100:8", "--slo", "ttft_p95_ms=5", "--workload", "fixed:10x10"}, "needs --model"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100:8", "--slo", "ttft_p95_ms=5"}, "--workload W or --trace"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100", "--slo", "ttft_p95_ms=5", "--workload", "fixed:10x10"}, "DEVICE:COUNT"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100:8", "--slo", "ttft_p97_ms=5", "--workload", "fixed:10x10"}, "p95"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100:8", "--slo", "ttft_p95_ms=5", "--workload", "fixed:10x10", "--cost-per-gpu-hour", "h200=3"}, "no price for h100"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100:8", "--slo", "ttft_p95_ms=5", "--workload", "fixed:10x10", "--shard", "3/3"}, "--shard"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100:8", "--slo", "ttft_p95_ms=5", "--workload", "fixed:10x10", "--rate", "0"}, "--rate"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100:8", "--slo", "ttft_p95_ms=5", "--workload", "fixed:10x10", "--seeds", "0"}, "--seeds"},
		{[]string{"search", "--model", "llama-3.1-8b", "--gpus", "h100:8", "--slo", "ttft_p95_ms=5", "--workload", "fixed:10x10", "--vllm-version", "x"}, "--vllm-version"},
	} {
		_, errOut, code := ftk(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q on one line", c.args, code, errOut, c.want)
		}
	}
}

// A search killed with SIGKILL continues where it stopped and reports what
// an uninterrupted search reports.
func TestSearchResumesAfterSIGKILL(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	killed, whole := filepath.Join(tmp, "killed"), filepath.Join(tmp, "whole")
	args := searchArgs(killed, "--workers", "1", "--num-requests", "1200")
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runAsFTK+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	results := func() int {
		m, _ := filepath.Glob(filepath.Join(killed, "candidates", "*", "result.json"))
		return len(m)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for results() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	done := results()
	if done < 3 {
		t.Fatalf("only %d candidates were searched before the kill", done)
	}
	if _, err := os.Stat(filepath.Join(killed, "results.csv")); err == nil {
		t.Fatal("the search finished before it was killed: the test needs a longer search")
	}
	out, errOut, code := ftk(t, args...)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "already searched") || strings.Contains(errOut, "(0 already searched") {
		t.Errorf("resume did not reuse the %d results: %s", done, errOut)
	}
	tmps, _ := filepath.Glob(filepath.Join(killed, "candidates", "*", ".*.tmp-*"))
	if len(tmps) > 0 {
		t.Errorf("temporary files left behind: %v", tmps)
	}
	wholeOut, errOut, code := ftk(t, searchArgs(whole, "--workers", "1", "--num-requests", "1200")...)
	if code != 0 {
		t.Fatalf("uninterrupted: exit %d: %s", code, errOut)
	}
	if strings.ReplaceAll(out, killed, "DIR") != strings.ReplaceAll(wholeOut, whole, "DIR") {
		t.Errorf("resumed search reports\n%s\nuninterrupted\n%s", out, wholeOut)
	}
	for _, f := range []string{"results.csv", "pareto.png"} {
		a, _ := os.ReadFile(filepath.Join(killed, f))
		b, _ := os.ReadFile(filepath.Join(whole, f))
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s differs between the resumed and the uninterrupted search", f)
		}
	}
}

// The fixed-rate question on the command line: --rate ranks the
// deployments meeting the SLO there with their margin and latencies at the
// rate, --seeds gives each its spread, --use-all keeps the two-GPU
// deployments, and the simulate options reach every candidate's
// config.yaml.
func TestSearchFixedRateCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	out, errOut, code := ftk(t, searchArgs(dir, "--rate", "20", "--seeds", "2", "--use-all", "--vllm-version", "0.14.0", "--async-scheduling=false", "--moe-skew", "0.5")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"MARGIN", "REQ/S 2 SEEDS", "VS NEXT", "ttft_p95_ms@20", "ranked meeting the SLO at 20 req/s", "misses the SLO at 20 req/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "    1  ") && strings.Contains(out, "  h100     1  ") {
		t.Errorf("--use-all ranked a one-GPU deployment:\n%s", out)
	}
	ids, err := os.ReadDir(filepath.Join(dir, "candidates"))
	if err != nil || len(ids) == 0 {
		t.Fatalf("no candidates: %v", err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "candidates", ids[0].Name(), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"vllm_version: 0.14.0", "async_scheduling: false", "skew: 0.5"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.yaml lacks %q:\n%s", want, cfg)
		}
	}
	for _, id := range ids {
		if strings.Contains(id.Name(), "tp1pp1ep1-dp1") {
			t.Errorf("--use-all searched %s, a one-GPU deployment of two", id.Name())
		}
	}
}
