package roofline

import (
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// FP8 GEMMs run at the FP8 peak with their own efficiency: a large W8A8
// GEMM on H100 is priced at 50-70% of 1,979 TFLOPS (DeepGEMM's
// 1,000-1,550 TFLOPS on H800), about 1.6x the BF16 one.
func TestFP8GEMMPeak(t *testing.T) {
	configs := filepath.Join("..", "spec", "testdata", "configs")
	bf16, err := spec.LookupModel(filepath.Join(configs, "llama-4-scout-17b-16e-instruct.json"))
	if err != nil {
		t.Fatal(err)
	}
	fp8, err := spec.LookupModel(filepath.Join(configs, "llama-4-scout-17b-16e-instruct-fp8-dynamic.json"))
	if err != nil {
		t.Fatal(err)
	}
	l := spec.Layout{TP: 4}
	d, _ := LookupDevice("h100")
	r := Roofline{Device: d}
	find := func(m *spec.Model) spec.Op {
		o, _ := findOp(spec.LayerOps(m, l, 0), spec.OpSharedUpProj)
		return o
	}
	ob, of := find(bf16), find(fp8)
	x := []float64{16384}
	flops, _ := of.Work(x)
	achieved := flops / (r.KernelMs(&of, x) / 1e3) / (d.PeakFP8TFLOPS * 1e12)
	if achieved < 0.5 || achieved > 0.7 {
		t.Errorf("FP8 GEMM at %.0f%% of the FP8 peak, want 50-70%%", 100*achieved)
	}
	if s := r.KernelMs(&ob, x) / r.KernelMs(&of, x); s < 1.4 || s > 1.9 {
		t.Errorf("FP8 GEMM %.2fx faster than BF16, want 1.4-1.9x", s)
	}
	// Ampere has no FP8 tensor cores: the same op runs at the BF16 rate.
	a, _ := LookupDevice("a100")
	ra := Roofline{Device: a}
	if s := ra.KernelMs(&ob, x) / ra.KernelMs(&of, x); s < 0.95 || s > 1.1 {
		t.Errorf("on A100 FP8 weights speed a compute-bound GEMM up %.2fx, want about 1", s)
	}
}
