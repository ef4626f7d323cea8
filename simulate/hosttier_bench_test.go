package simulate

import (
	"fmt"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
)

// BenchmarkHostTier reports simulated requests per CPU-second with the host
// tier off and on (--kv-offloading-size 200, llama-3.1-8b on one H100,
// roofline) on the agent preset of docs/kv-offloading.md: 3,000 requests
// from 64 closed-loop clients running 16-turn sessions over 4 system
// prompts of 6,000 tokens, 800-token tool results and 200-token replies,
// 5 s mean think time, whose history outgrows the GPU's KV cache, so the
// tier changes the run (a third of the prompt tokens load from the host);
// and on BenchmarkPrefixCaching's sessions (20,000 requests, 64 clients),
// whose history fits the GPU, so the tier costs bookkeeping only. The
// target: the tier on at most 1.5x the CPU time of the tier off. Variants
// run in turn within each iteration, so load from other processes falls on
// both alike.
func BenchmarkHostTier(b *testing.B) {
	agent, err := datasets.ParseWorkload(agentPreset)
	if err != nil {
		b.Fatal(err)
	}
	small, err := datasets.ParseWorkload("sessions:groups=16,users=4,system=1024,turns=8,question=128,output=128")
	if err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name string
		size float64
		w    datasets.Workload
		n    int
		th   float64
	}
	var variants []variant
	for _, size := range []float64{0, 200} {
		variants = append(variants, variant{"agent preset, 64 clients", size, agent, 3000, 5},
			variant{"BenchmarkPrefixCaching's sessions", size, small, 20000, 1})
	}
	cpu := make([]float64, len(variants))
	reqs := make([]int64, len(variants))
	host := make([]float64, len(variants))
	for i := 0; i < b.N; i++ {
		for v, x := range variants {
			cfg := testConfig()
			cfg.Engine.MaxModelLen = 32768
			cfg.Engine.KVOffloadingSize = x.size
			src, err := datasets.NewClients(x.w, datasets.Arrivals{}, 64, x.n, x.th, 1)
			if err != nil {
				b.Fatal(err)
			}
			cpu0 := cpuSeconds(b)
			sim, err := New(cfg, Options{})
			if err != nil {
				b.Fatal(err)
			}
			sum, err := sim.Run(src)
			if err != nil {
				b.Fatal(err)
			}
			cpu[v] += cpuSeconds(b) - cpu0
			reqs[v] += int64(sum.Metrics.Arrived)
			host[v] = sum.Metrics.PrefixCache.HostHitRate
		}
	}
	for v, x := range variants {
		fmt.Printf("simulate host tier %g GiB, %s: %d requests in %.3f CPU-s: %.0f requests/CPU-s, host hit rate %.1f%%\n",
			x.size, x.name, reqs[v], cpu[v], float64(reqs[v])/cpu[v], 100*host[v])
	}
	b.ReportMetric(cpu[2]/cpu[0], "on/off-CPU(agent)")
	b.ReportMetric(cpu[3]/cpu[1], "on/off-CPU(sessions)")
}
