package simulate

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// vidurRequestsPerCPUSecond is what Vidur (Python) simulates on this kind
// of trace, the figure to beat 200-fold.
const vidurRequestsPerCPUSecond = 250

// BenchmarkSplitwiseConv replays the real Splitwise conversation trace
// (19,366 requests) on llama-3.1-8b at TP1 with the roofline cost model and
// reports simulated requests and engine steps per CPU-second. "core" is
// the simulation alone (trace loaded beforehand); "outputs" adds writing
// requests.csv, requests.arrow, summary.json and config.yaml.
func BenchmarkSplitwiseConv(b *testing.B) {
	cfg := testConfig()
	cfg.Workload = runresult.WorkloadConfig{Trace: sharedDir + "/traces/splitwise_conv.csv"}
	rs, err := datasets.ReadTrace(cfg.Workload.Trace)
	if err != nil {
		b.Fatal(err)
	}
	for _, withOutputs := range []bool{false, true} {
		name := "core"
		if withOutputs {
			name = "outputs"
		}
		b.Run(name, func(b *testing.B) {
			var requests, steps int64
			cpu0 := cpuSeconds(b)
			for i := 0; i < b.N; i++ {
				sum := runTrace(b, cfg, rs, withOutputs)
				requests += int64(sum.Metrics.Arrived)
				steps += sum.Metrics.Steps
			}
			cpu := cpuSeconds(b) - cpu0
			rps, sps := float64(requests)/cpu, float64(steps)/cpu
			b.ReportMetric(rps, "requests/CPU-s")
			b.ReportMetric(sps, "steps/CPU-s")
			fmt.Printf("simulate splitwise_conv (%s): %d requests, %d steps in %.3f CPU-s: %.0f requests/CPU-s (%.0fx Vidur's %d), %.0f steps/CPU-s\n",
				name, requests, steps, cpu, rps, rps/vidurRequestsPerCPUSecond, vidurRequestsPerCPUSecond, sps)
		})
	}
}

// runTrace simulates rs with cfg, writing every output file when asked.
func runTrace(b *testing.B, cfg runresult.Config, rs []spec.Request, withOutputs bool) *runresult.Summary {
	var sum *runresult.Summary
	var err error
	if withOutputs {
		sum, err = Execute(mustResolve(b, cfg), NewSliceSource(rs), Outputs{Dir: b.TempDir()}, Options{})
	} else {
		var sim *Simulation
		if sim, err = New(cfg, Options{}); err == nil {
			sum, err = sim.Run(NewSliceSource(rs))
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	return sum
}

// BenchmarkSplitwiseConvVsDense replays the Splitwise conversation trace
// with the MoE and disaggregated engines and compares their requests per
// CPU-second with the dense run's: qwen3-30b-a3b at TP8/EP8 (128 experts,
// top-8; every step draws a routing for each of 48 MoE layers) with uniform
// and with skewed routing; qwen3-30b-a3b as vLLM serves it at scale, DP8 x
// EP8 at TP1 (eight engines stepping in lockstep, every step pricing each
// rank and one exchange over all of them, vLLM's load balancer); llama-3.1-8b disaggregated with one prefill and one or two
// decode instances (every request's KV cache crossing a link). The
// variants run in turn within each iteration, so that load from other
// processes falls on all of them alike. The target is at least half the
// dense figure.
func BenchmarkSplitwiseConvVsDense(b *testing.B) {
	trace := sharedDir + "/traces/splitwise_conv.csv"
	rs, err := datasets.ReadTrace(trace)
	if err != nil {
		b.Fatal(err)
	}
	dense := testConfig()
	moe := func(m runresult.MoEConfig) runresult.Config {
		c := testConfig()
		c.Model, c.Layout, c.MoE = "qwen3-30b-a3b", spec.Layout{TP: 8, EP: 8}, m
		return c
	}
	dpep := func(m runresult.MoEConfig) runresult.Config {
		c := moe(m)
		c.Layout, c.Router = spec.Layout{TP: 1, EP: 8, DP: 8}, runresult.RouterLeastLoaded
		return c
	}
	disagg := func(p, d int) runresult.Config {
		c := testConfig()
		c.Mode = runresult.ModeDisaggregated
		c.Disaggregation = runresult.DisaggregationConfig{PrefillInstances: p, DecodeInstances: d}
		return c
	}
	variants := []struct {
		name string
		cfg  runresult.Config
	}{
		{"dense llama-3.1-8b TP1", dense},
		{"MoE qwen3-30b-a3b TP8/EP8 uniform", moe(runresult.MoEConfig{Routing: runresult.RoutingUniform})},
		{"MoE qwen3-30b-a3b TP8/EP8 skewed", moe(runresult.MoEConfig{Routing: runresult.RoutingSkewed})},
		{"MoE qwen3-30b-a3b DP8 x EP8 lockstep, default routing", dpep(runresult.MoEConfig{})},
		{"MoE qwen3-30b-a3b DP8 x EP8 lockstep skewed, DeepEP LL", dpep(runresult.MoEConfig{Routing: runresult.RoutingSkewed, All2AllBackend: spec.All2AllDeepEPLL})},
		{"disaggregated llama-3.1-8b 1P1D", disagg(1, 1)},
		{"disaggregated llama-3.1-8b 1P2D", disagg(1, 2)},
	}
	cpu := make([]float64, len(variants))
	requests, steps := make([]int64, len(variants)), make([]int64, len(variants))
	for i := 0; i < b.N; i++ {
		for v := range variants {
			cfg := variants[v].cfg
			cfg.Workload = runresult.WorkloadConfig{Trace: trace}
			cpu0 := cpuSeconds(b)
			sum := runTrace(b, cfg, rs, false)
			cpu[v] += cpuSeconds(b) - cpu0
			requests[v] += int64(sum.Metrics.Arrived)
			steps[v] += sum.Metrics.Steps
		}
	}
	denseRPS := float64(requests[0]) / cpu[0]
	for v, x := range variants {
		rps := float64(requests[v]) / cpu[v]
		if v > 0 {
			b.ReportMetric(rps/denseRPS, fmt.Sprintf("x-dense(%d)", v))
		}
		fmt.Printf("simulate splitwise_conv, %s: %d requests, %d steps in %.3f CPU-s: %.0f requests/CPU-s, %.2f of dense, %.0f steps/CPU-s\n",
			x.name, requests[v], steps[v], cpu[v], rps, rps/denseRPS, float64(steps[v])/cpu[v])
	}
}

// heapPeak samples the live heap during a run.
type heapPeak struct {
	peak uint64
	ms   runtime.MemStats
}

func (h *heapPeak) sample(int, float64) {
	runtime.ReadMemStats(&h.ms)
	h.peak = max(h.peak, h.ms.HeapAlloc)
}

// BenchmarkMillionRequests streams a generated 1,000,000-request trace
// (fixed 256 prompt x 16 output tokens, Poisson at 100 req/s, so the
// engine is loaded but stable) through llama-3.1-8b at TP1, writing every
// output file, and reports the peak heap (sampled every 16,384 events) and
// the memory the runtime took from the OS.
func BenchmarkMillionRequests(b *testing.B) {
	cfg := testConfig()
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:256x16", RatePerS: 100, NumRequests: 1_000_000, Seed: 1}
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		src, _, err := openSource(cfg.Workload)
		if err != nil {
			b.Fatal(err)
		}
		h := &heapPeak{}
		cpu0 := cpuSeconds(b)
		sum, err := Execute(mustResolve(b, cfg), src, Outputs{Dir: b.TempDir()}, Options{Progress: h.sample})
		if err != nil {
			b.Fatal(err)
		}
		cpu := cpuSeconds(b) - cpu0
		h.sample(0, 0)
		sysMB := float64(h.ms.Sys-before.Sys) / (1 << 20)
		b.ReportMetric(float64(h.peak)/(1<<20), "peak-heap-MB")
		b.ReportMetric(float64(h.ms.Sys)/(1<<20), "sys-MB")
		b.ReportMetric(float64(sum.Metrics.Arrived)/cpu, "requests/CPU-s")
		fmt.Printf("simulate 1M requests: %d completed, %d steps, peak heap %.1f MB, runtime memory %.1f MB (+%.1f MB during the run), %.2f CPU-s (%.0f requests/CPU-s)\n",
			sum.Metrics.Completed, sum.Metrics.Steps, float64(h.peak)/(1<<20), float64(h.ms.Sys)/(1<<20), sysMB, cpu, float64(sum.Metrics.Arrived)/cpu)
	}
}
