package collect

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ftk-dev/ftk/spec"
)

// BenchmarkSyntheticSweep times the reference sweep: every family
// of Qwen3-30B-A3B on TP8/EP8 with the default engine limits, synthetic
// backend, from an empty folder (target: well under a minute on 2 cores).
func BenchmarkSyntheticSweep(b *testing.B) {
	m := mustModel(b, "qwen3-30b-a3b")
	c := planConfig(m, defaultLimits, []spec.Layout{{TP: 8, EP: 8}})
	for b.Loop() {
		o := Options{Plan: c, Device: mustDevice(b, "h100"), Out: b.TempDir(), Backend: BackendSynthetic, Warmup: 5, Repeats: 20}
		start := time.Now()
		sum, err := Run(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		el := time.Since(start).Seconds()
		b.ReportMetric(float64(sum.Measured), "shapes")
		b.ReportMetric(float64(sum.Measured)/el, "shapes/s")
		b.ReportMetric(el, "s/sweep")
		fmt.Printf("synthetic sweep qwen3-30b-a3b TP8/EP8 on h100: %d shapes in %.2f s (%.0f shapes/s)\n", sum.Measured, el, float64(sum.Measured)/el)
	}
}

// BenchmarkPlan times planning alone (MoE routing draws included).
func BenchmarkPlan(b *testing.B) {
	m := mustModel(b, "qwen3-30b-a3b")
	c := planConfig(m, defaultLimits, []spec.Layout{{TP: 8, EP: 8}})
	for b.Loop() {
		if _, err := NewPlan(c); err != nil {
			b.Fatal(err)
		}
	}
}
