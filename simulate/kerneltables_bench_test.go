package simulate

import (
	"fmt"
	"testing"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// BenchmarkKernelTables replays the Splitwise conversation trace (19,366
// requests) priced from AIConfigurator's H100 kernel tables of vLLM 0.14.0
// (testdata's copy, loaded beforehand as the trace is) beside the same
// runs priced by the built-in roofline: llama-3.1-8b at TP1 and
// qwen3-30b-a3b at TP1 and TP2 (a table all-reduce). Target: at least
// 50,000 requests per CPU-second from the tables.
func BenchmarkKernelTables(b *testing.B) {
	trace := sharedDir + "/traces/splitwise_conv.csv"
	rs, err := datasets.ReadTrace(trace)
	if err != nil {
		b.Fatal(err)
	}
	dev, err := spec.LookupDevice("h100")
	if err != nil {
		b.Fatal(err)
	}
	type variant struct {
		name   string
		cfg    runresult.Config
		tables bool
	}
	var variants []variant
	for _, mc := range []struct {
		model string
		tp    int
	}{{"llama-3.1-8b", 1}, {"qwen3-30b-a3b", 1}, {"qwen3-30b-a3b", 2}} {
		c := testConfig()
		c.Model, c.Device, c.Layout = mc.model, "h100", spec.Layout{TP: mc.tp}
		c.Workload = runresult.WorkloadConfig{Trace: trace}
		for _, tables := range []bool{false, true} {
			src := "roofline"
			if tables {
				src = "kernel tables"
			}
			variants = append(variants, variant{fmt.Sprintf("%s TP%d, %s", mc.model, mc.tp, src), c, tables})
		}
	}
	preds := make([]cost.PredictorSet, len(variants))
	for v, x := range variants {
		if !x.tables {
			continue
		}
		m, err := spec.LookupModel(x.cfg.Model)
		if err != nil {
			b.Fatal(err)
		}
		kt, err := cost.LoadKernelTables(sharedDir+"/aiconfigurator/h100_sxm", "0.14.0", m, dev)
		if err != nil {
			b.Fatal(err)
		}
		preds[v] = kt
	}
	cpu := make([]float64, len(variants))
	requests := make([]int64, len(variants))
	tpot := make([]float64, len(variants))
	for i := 0; i < b.N; i++ {
		for v := range variants {
			cpu0 := cpuSeconds(b)
			sim, err := New(variants[v].cfg, Options{Predictors: preds[v]})
			if err != nil {
				b.Fatal(err)
			}
			sum, err := sim.Run(NewSliceSource(rs))
			if err != nil {
				b.Fatal(err)
			}
			cpu[v] += cpuSeconds(b) - cpu0
			requests[v] += int64(sum.Metrics.Arrived)
			tpot[v] = sum.Metrics.TPOTMs.Mean
		}
	}
	for v, x := range variants {
		rps := float64(requests[v]) / cpu[v]
		if x.tables {
			b.ReportMetric(rps, fmt.Sprintf("requests/CPU-s(%d)", v))
		}
		fmt.Printf("simulate splitwise_conv on h100, %s: %d requests in %.3f CPU-s: %.0f requests/CPU-s; mean TPOT %.2f ms\n",
			x.name, requests[v], cpu[v], rps, tpot[v])
	}
}
