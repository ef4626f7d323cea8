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
// 256x32 tokens, Poisson at 50 req/s: loaded but stable), and on
// 10,000,000 as an offline batch (no --rate: every request at t=0, the
// source read only as the engine's queue drains), and replays a
// 10,000,000-row trace file of the same requests ('ftk datasets make', then
// --trace: the file is read row by row), with every output file written,
// and prints the peak resident memory the kernel reports for the
// process (ru_maxrss, what /usr/bin/time -v prints): the goal is under 150
// MB at 10M requests, independent of the request count.
func BenchmarkSimulatePeakRSS(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		for _, c := range []struct {
			n    int
			rate string
		}{{1_000_000, "50"}, {10_000_000, "50"}, {10_000_000, ""}, {10_000_000, "trace"}} {
			out := filepath.Join(b.TempDir(), "sim")
			args := []string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:256x32",
				"--num-requests", strconv.Itoa(c.n), "-o", out}
			label, what := fmt.Sprintf("MB-peak-RSS-%dM", c.n/1_000_000), "at 50 req/s"
			switch c.rate {
			case "":
				label, what = label+"-offline", "offline batch"
			case "trace":
				trace := filepath.Join(filepath.Dir(out), "trace.csv")
				mk := exec.Command(exe, "datasets", "make", "fixed:256x32", "--rate", "50", "-n", strconv.Itoa(c.n), "-o", trace)
				mk.Env = append(os.Environ(), runAsFTK+"=1")
				if msg, err := mk.CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", mk.Args, err, msg)
				}
				args = []string{"simulate", "--model", "llama-3.1-8b", "--trace", trace, "-o", out}
				label, what = label+"-trace", "trace replay at 50 req/s"
			default:
				args = append(args, "--rate", c.rate)
			}
			cmd := exec.Command(exe, args...)
			cmd.Env = append(os.Environ(), runAsFTK+"=1")
			if msg, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%v: %v\n%s", cmd.Args, err, msg)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			mb := float64(ru.Maxrss) / 1024 // ru_maxrss is in KiB on Linux
			b.ReportMetric(mb, label)
			fmt.Printf("simulate %d requests, %s (every output written): %.0f MB peak RSS, %.1f CPU-s (goal: under 150 MB at 10M)\n",
				c.n, what, mb, (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds())
			os.RemoveAll(filepath.Dir(out))
		}
	}
}
