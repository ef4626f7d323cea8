package simulate

import (
	"fmt"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
)

// BenchmarkPrefixCaching reports simulated requests per CPU-second with
// prefix caching on and off (llama-3.1-8b, TP1, roofline) on the Splitwise
// conversation trace (19,366 requests, no shared content: caching costs
// bookkeeping and helps preempted requests only) and on a shared-prefix
// multi-turn workload: 20,000 requests from 64 closed-loop clients running
// 8-turn sessions over 16 system prompts of 1,024 tokens, 128-token
// questions and replies, 1 s mean think time. The target is 50,000
// requests per CPU-second with caching on. Variants run in turn within
// each iteration, so load from other processes falls on all alike.
func BenchmarkPrefixCaching(b *testing.B) {
	conv, err := datasets.ReadTrace(sharedDir + "/traces/splitwise_conv.csv")
	if err != nil {
		b.Fatal(err)
	}
	sessions, err := datasets.ParseWorkload("sessions:groups=16,users=4,system=1024,turns=8,question=128,output=128")
	if err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name string
		on   bool
		src  func() Source
	}
	var variants []variant
	for _, on := range []bool{false, true} {
		variants = append(variants,
			variant{"splitwise_conv", on, func() Source { return NewSliceSource(conv) }},
			variant{"sessions 64 clients x 8 turns", on, func() Source {
				c, err := datasets.NewClients(sessions, datasets.Arrivals{}, 64, 20000, 1, 1)
				if err != nil {
					b.Fatal(err)
				}
				return c
			}})
	}
	cpu := make([]float64, len(variants))
	reqs := make([]int64, len(variants))
	hit := make([]float64, len(variants))
	for i := 0; i < b.N; i++ {
		for v, x := range variants {
			cfg := testConfig()
			cfg.Engine.EnablePrefixCaching = x.on
			src := x.src()
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
			hit[v] = sum.Metrics.PrefixCache.HitRate
		}
	}
	for v, x := range variants {
		rps := float64(reqs[v]) / cpu[v]
		state := "off"
		if x.on {
			state = "on "
			b.ReportMetric(rps, fmt.Sprintf("req/CPU-s(%d)", v))
		}
		fmt.Printf("simulate prefix caching %s, %s: %d requests in %.3f CPU-s: %.0f requests/CPU-s, hit rate %.1f%%\n",
			state, x.name, reqs[v], cpu[v], rps, 100*hit[v])
	}
}
