package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// The cuBLAS model prices a BF16 linear layer only when the kernel is
// named (KernelsFor with a vLLM version, on Hopper); without one the GEMM
// class's curve does. Checked on three rows of AIConfigurator's vLLM
// 0.14.0 H100 SXM BF16 gemm table (testdata/aiconfigurator): at 160
// tokens the curve pads two 128-row tiles (129.7 us for 8,192 x 16,384,
// measured 93.0) where the cuBLAS model stays within 10% of each row
// (1 x 8,192 x 8,192, 45.6 us; 8,192^3, 1,374 us). FP8 GEMMs are not
// its (the GEMM class's curve with the FP8 roof).
func TestCuBLASPricesNamedKernelOnly(t *testing.T) {
	if k := KernelsFor(spec.ArchHopper, "0.14.0"); k.BF16GEMM != KernelFLinear {
		t.Errorf("Hopper, vLLM 0.14.0: BF16 GEMM kernel %q, want %q", k.BF16GEMM, KernelFLinear)
	}
	for _, c := range []struct{ arch, version string }{{spec.ArchHopper, ""}, {spec.ArchAmpere, ""}, {spec.ArchAda, "0.24.0"}} {
		if k := KernelsFor(c.arch, c.version); k.BF16GEMM != "" {
			t.Errorf("%s, vLLM %q: BF16 GEMM kernel %q, want the curve's (empty)", c.arch, c.version, k.BF16GEMM)
		}
	}
	d, err := LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	named := Roofline{Device: d, Kernels: KernelsFor(d.Arch, "0.14.0")}
	plain := Roofline{Device: d}
	for _, row := range []struct {
		m          float64
		n, k       int
		measuredUs float64
	}{{160, 8192, 16384, 93.0}, {1, 8192, 8192, 45.6}, {8192, 8192, 8192, 1373.7}} {
		o := spec.Op{Name: spec.OpAttnPostProj, Family: spec.FamilyLinear, Kernels: 1, K: row.k, N: row.n, ElemBytes: 2}
		got, curve := named.KernelMs(&o, []float64{row.m})*1e3, plain.KernelMs(&o, []float64{row.m})*1e3
		if got == curve {
			t.Errorf("%v x %d x %d: the named kernel is priced as the curve (%.1f us)", row.m, row.n, row.k, got)
		}
		if e := (got - row.measuredUs) / row.measuredUs; math.Abs(e) > 0.1 {
			t.Errorf("%v x %d x %d: cuBLAS model %.1f us, measured %.1f (%+.0f%%)", row.m, row.n, row.k, got, row.measuredUs, 100*e)
		}
		fp8 := o
		fp8.FP8, fp8.ElemBytes = true, 1
		if a, b := named.KernelMs(&fp8, []float64{row.m}), plain.KernelMs(&fp8, []float64{row.m}); a != b {
			t.Errorf("%v x %d x %d FP8: %.4f ms with the BF16 kernel named, %.4f without", row.m, row.n, row.k, a, b)
		}
	}
}

// Blackwell's cuBLAS terms price the B200 (compute capability 10.0) only:
// the RTX PRO 6000 (12.0, no tcgen05 MMA) keeps the GEMM class's curve
// even with the kernel named, as Ada does; Hopper and Ampere (Hopper's
// terms) take the model.
func TestCuBLASOnDataCenterBlackwellOnly(t *testing.T) {
	for _, c := range []struct {
		device string
		cuBLAS bool
	}{{"b200", true}, {"rtxpro6000", false}, {"h100", true}, {"l40s", false}, {"a100", true}} {
		d, err := LookupDevice(c.device)
		if err != nil {
			t.Fatal(err)
		}
		o := spec.Op{Name: spec.OpMLPUpProj, Family: spec.FamilyLinear, Kernels: 1, K: 4096, N: 28672, ElemBytes: 2}
		named := Roofline{Device: d, Kernels: KernelsFor(d.Arch, "0.24.0")}
		differs := named.KernelMs(&o, []float64{160}) != Roofline{Device: d}.KernelMs(&o, []float64{160})
		if (d.Curves.CuBLAS != nil) != c.cuBLAS || differs != c.cuBLAS {
			t.Errorf("%s (compute capability %q): cuBLAS terms %v, named kernel priced apart %v, want %v", c.device, d.ComputeCapability, d.Curves.CuBLAS != nil, differs, c.cuBLAS)
		}
	}
}
