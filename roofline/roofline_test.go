package roofline

import (
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// The built-in device model against public H100 SXM figures (NVIDIA H100
// datasheet: 989 TFLOP/s dense BF16, 3.35 TB/s HBM3; cuBLAS reaches about
// 70-80% of dense peak on large BF16 GEMMs, streaming kernels 80-90% of HBM
// bandwidth).
func TestRooflineAgainstH100Figures(t *testing.T) {
	d, err := LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d}

	// A large square BF16 GEMM: 8192 x 8192 x 8192 lands near the stated
	// 72% of peak (wave quantisation may take a few points off).
	gemm := spec.Op{Name: "gemm", Family: spec.FamilyLinear, Kernels: 1, K: 8192, N: 8192, ElemBytes: 2}
	x := []float64{8192}
	flops, _ := gemm.Work(x)
	achieved := flops / (r.KernelMs(&gemm, x) / 1e3) / (d.PeakBF16TFLOPS * 1e12)
	if achieved < 0.65 || achieved > hopperCurves.Class[ClassGEMM].ComputeEff+1e-9 {
		t.Errorf("8192^3 BF16 GEMM at %.1f%% of peak, want near %.0f%%", 100*achieved, 100*hopperCurves.Class[ClassGEMM].ComputeEff)
	}

	// Decode attention at long context streams the KV cache: 64 sequences
	// of 32k tokens with Llama-3-8B heads read 4.3 GB, near HBM bandwidth.
	attn := spec.Op{Name: spec.OpAttnDecode, Family: spec.FamilyAttention, Kernels: 1, QHeads: 32, KVHeads: 8, HeadDim: 128, ElemBytes: 2}
	xa := []float64{64, 32768}
	_, bytes := attn.Work(xa)
	bw := bytes / (r.KernelMs(&attn, xa) / 1e3) / (d.HBMGBps * 1e9)
	if bw < 0.75 || bw > 0.9 {
		t.Errorf("long-context decode attention at %.1f%% of HBM bandwidth, want 75-90%%", 100*bw)
	}

	// A tiny kernel (RMSNorm of one token) is launch-bound: its GPU time
	// is about one kernel floor, and timed eagerly with CUDA events it
	// costs the host's path to the kernel and the end event, which the
	// H800 profiles put at 16-17 us (frontier-h800/*/linear_op.csv).
	norm := spec.Op{Name: spec.OpInputLayernorm, Family: spec.FamilyLinear, Kernels: 1, Width: 4096, ElemBytes: 2}
	one := []float64{1}
	k, e := r.KernelMs(&norm, one)*1e3, r.EventMs(&norm, one)*1e3
	if k < 2 || k > 4 {
		t.Errorf("1-token RMSNorm kernel %.2f us, want 2-4 us (2.6-3.0 us in the H800 KERNEL_ONLY profiles)", k)
	}
	if e < 14 || e > 19 {
		t.Errorf("1-token RMSNorm CUDA_EVENT %.2f us, want 14-19 us", e)
	}
	t.Logf("H100: 8192^3 GEMM %.1f%% of peak; decode attention 64x32k %.1f%% of HBM; 1-token RMSNorm kernel %.2f us, CUDA_EVENT %.2f us",
		100*achieved, 100*bw, k, e)
}

// EventMs never undercuts KernelMs: a CUDA_EVENT timing holds the kernels.
func TestRooflineEventCoversKernel(t *testing.T) {
	d, _ := LookupDevice("a100")
	r := Roofline{Device: d}
	for _, tc := range []struct {
		o spec.Op
		x []float64
	}{
		{spec.Op{Name: spec.OpMLPUpProj, Family: spec.FamilyLinear, Kernels: 1, K: 4096, N: 28672, ElemBytes: 2}, []float64{512}},
		{spec.Op{Name: spec.OpAttnPrefill, Family: spec.FamilyAttention, Kernels: 1, QHeads: 32, KVHeads: 8, HeadDim: 128, ElemBytes: 2}, []float64{1024, 2048}},
		{spec.Op{Name: spec.OpAllReduce, Family: spec.FamilyCollective, Kernels: 1, Width: 4096, Workers: 8, ElemBytes: 2}, []float64{1 << 24}},
	} {
		if k, e := r.KernelMs(&tc.o, tc.x), r.EventMs(&tc.o, tc.x); !(e >= k && k > 0) {
			t.Errorf("%s: kernel %.4f ms, event %.4f ms", tc.o.Name, k, e)
		}
	}
}

// The A800's kernel-traced rotary embeddings at TP4 (8 q heads, 1 k head:
// one full 512-thread iteration and one of 64 lanes a token) grow by the
// iterations, not the bytes, once the SMs are full of blocks
// (Curve.FullIterUs): from 464 tokens they are within 10% on average.
// Priced by their bytes alone they were 15% under (6.5 ns a token
// measured, 4.9 priced).
func TestAmpereRopeIterations(t *testing.T) {
	d, err := LookupDevice("a800")
	if err != nil {
		t.Fatal(err)
	}
	mape, n := rowsMAPE(t, d, func(p realPoint) bool {
		return strings.Contains(p.profile, "a800") && p.meas == spec.KernelOnly && p.op.Name == spec.OpAttnRope && p.op.Width == 1152 && p.x[0] >= 464
	}, nil)
	if n < 150 {
		t.Fatalf("%d A800 kernel-traced TP4 rotary rows from 464 tokens, want the file's ~200", n)
	}
	if mape > 10 {
		t.Errorf("A800 TP4 rotary embedding from 464 tokens: MAPE %.1f%%, want <= 10%%", mape)
	}
}
