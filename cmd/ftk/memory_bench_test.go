package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// BenchmarkSimulatePeakRSS runs 'ftk simulate' as its own process on
// 1,000,000 and 10,000,000 generated requests (llama-3.1-8b TP1, fixed
// 256x32 tokens, Poisson at 50 req/s: loaded but stable) with every output
// file written, and prints the peak resident memory the kernel reports for
// the process (ru_maxrss, what /usr/bin/time -v prints): the goal is under
// 150 MB at 10M requests, independent of the request count.
func BenchmarkSimulatePeakRSS(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		for _, n := range []int{1_000_000, 10_000_000} {
			out := filepath.Join(b.TempDir(), "sim")
			cmd := exec.Command(exe, "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x32", "--rate", "50",
				"--num-requests", strconv.Itoa(n), "-o", out)
			cmd.Env = append(os.Environ(), runAsFTK+"=1")
			if msg, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %v\n%s", cmd.Args, err, msg)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			mb := float64(ru.Maxrss) / 1024 // ru_maxrss is in KiB on Linux
			b.ReportMetric(mb, fmt.Sprintf("MB-peak-RSS-%dM", n/1_000_000))
			fmt.Printf("simulate %d requests (every output written): %.0f MB peak RSS, %.1f CPU-s (goal: under 150 MB at 10M)\n",
				n, mb, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
			os.RemoveAll(out)
		}
	}
}
