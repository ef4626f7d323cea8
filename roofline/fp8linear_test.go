package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// A served FP8 output projection adds the attention output's standalone
// quantization when the vLLM version is given (Kernels.FP8Linear), and
// nothing else does: not the other FP8 layers (their quantization is
// fused before them), not a BF16 layer, not a device model without a
// version, not a device without FP8 terms. With the version, a per-tensor
// FP8 layer's GEMM is CUTLASS's (cutlassfp8.go); a block-FP8 or BF16
// layer's price does not move.
func TestServedActQuant(t *testing.T) {
	for _, name := range []string{"h100", "b200"} {
		d, err := spec.LookupDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		dev := NewDevice(d)
		served := Roofline{Device: dev, Compiled: true, Kernels: KernelsFor(d.Arch, "0.24.0")}
		q, ok := FP8ActQuantOf(d.Arch)
		if !ok {
			t.Fatalf("%s: no terms", name)
		}
		c, ok := CutlassFP8Of(d.Arch)
		if !ok {
			t.Fatalf("%s: no CUTLASS FP8 terms", name)
		}
		for _, tokens := range []float64{1, 64, 2048} {
			x := []float64{tokens}
			oproj := spec.Op{Name: spec.OpAttnPostProj, Family: spec.FamilyLinear, Kernels: 1, K: 4096, N: 4096, ElemBytes: 1, FP8: true}
			down := oproj
			down.Name = spec.OpMLPDownProj
			gemm := served.CutlassFP8Us(c, &down, tokens)
			if got := served.KernelMs(&down, x) * 1e3; math.Abs(got-gemm) > 1e-9 {
				t.Errorf("%s %g tokens: FP8 down projection %.4f us, want CUTLASS's %.4f", name, tokens, got, gemm)
			}
			got := served.KernelMs(&oproj, x)*1e3 - gemm
			if want := q.Us(dev, tokens, 4096); math.Abs(got-want) > 1e-9 {
				t.Errorf("%s %g tokens: o_proj +%.4f us, want the quantization's %.4f", name, tokens, got, want)
			}
			if tokens == 1 && (got < 1.5 || got > 3) {
				t.Errorf("%s: one token's quantization %.2f us, want the 2-2.2 us floor of the quantize tables", name, got)
			}
			noFP8 := served
			noFP8.Kernels.FP8Linear = ""
			for _, o := range []spec.Op{
				{Name: spec.OpMLPDownProj, Family: spec.FamilyLinear, Kernels: 1, K: 4096, N: 4096, ElemBytes: 1, FP8: true, FP8Block: true},
				{Name: spec.OpAttnPostProj, Family: spec.FamilyLinear, Kernels: 1, K: 4096, N: 4096, ElemBytes: 2},
			} {
				if a, b := served.KernelMs(&o, x), noFP8.KernelMs(&o, x); a != b {
					t.Errorf("%s %s: %.6f ms with the FP8 dispatch, %.6f without", name, o.Name, a, b)
				}
			}
		}
	}
	if _, ok := FP8ActQuantOf(spec.ArchAmpere); ok {
		t.Error("Ampere has FP8 activation quantization terms")
	}
	if k := KernelsFor(spec.ArchAmpere, "0.24.0"); k.FP8Linear != "" {
		t.Errorf("Ampere: FP8Linear %q", k.FP8Linear)
	}
}
