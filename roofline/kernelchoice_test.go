package roofline

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// KernelsFor names the fused-MoE kernel of each weight format per vLLM
// release on Hopper (kernelchoice.go) and nothing where no rule applies.
func TestKernelsForHopperMoE(t *testing.T) {
	tr, fi := MoEKernelTriton, MoEFlashInferCutlass
	for _, tc := range []struct {
		arch, version string
		want          MoEKernels
	}{
		{spec.ArchHopper, "", MoEKernels{}},
		{spec.ArchHopper, "0.10.1", MoEKernels{}},
		{spec.ArchHopper, "0.9.2", MoEKernels{}},
		{spec.ArchHopper, "0.14.0", MoEKernels{BF16: tr, FP8: tr, FP8Block: tr, FP8BlockEP: tr}},
		{spec.ArchHopper, "0.16.1", MoEKernels{BF16: tr, FP8: tr, FP8Block: tr, FP8BlockEP: tr}},
		{spec.ArchHopper, "0.17.0", MoEKernels{BF16: tr, FP8: tr, FP8Block: tr, FP8BlockEP: tr, ConfigsBefore: "2026-03-07", ScaledDefault: true}},
		{spec.ArchHopper, "0.24.0", MoEKernels{BF16: tr, FP8: fi, FP8Block: tr, FP8BlockEP: fi, ConfigsBefore: "2026-07-13", ScaledDefault: true}},
		{spec.ArchBlackwell, "0.24.0", MoEKernels{}},
		{spec.ArchAmpere, "0.14.0", MoEKernels{}},
	} {
		if got := KernelsFor(tc.arch, tc.version).MoEByFormat; got != tc.want {
			t.Errorf("%s vLLM %q: %+v, want %+v", tc.arch, tc.version, got, tc.want)
		}
	}
	for _, tc := range []struct {
		source, want string
	}{
		{"vllm_fused_moe", tr},
		{"vllm_unquantizedfusedmoe_triton_tritonexperts", tr},
		{"vllm_fp8moe_triton_tritonexperts", tr},
		{"vllm_fp8moe_flashinfer_cutlass_flashinferexperts", fi},
		{"vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic", ""},
		{"vllm_marlin_moe", ""},
	} {
		if got := MoEKernelOfSource(tc.source); got != tc.want {
			t.Errorf("kernel source %s: %q, want %q", tc.source, got, tc.want)
		}
	}
}

// Without a kernel named (no vLLM version) the fused-MoE ops keep the
// classes' curves; naming Triton prices them with the fused_experts terms
// on Hopper only.
func TestTritonMoEOnlyWhenNamed(t *testing.T) {
	gg := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: 2048, ExpertWidth: 768,
		LocalExperts: 128, Experts: 128, TopK: 8, ElemBytes: 2}
	x := []float64{8192, 64, 0, 1024}
	for _, name := range []string{"h100", "b200", "a100"} {
		d, err := LookupDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		plain := Roofline{Device: d}
		named := Roofline{Device: d, Kernels: KernelsFor(d.Arch, "0.14.0")}
		a, b := plain.KernelMs(&gg, x), named.KernelMs(&gg, x)
		if hopper := d.Arch == spec.ArchHopper; hopper == (a == b) {
			t.Errorf("%s: %.4f ms without a version, %.4f ms at vLLM 0.14.0 (Hopper only should differ)", name, a, b)
		}
	}
}
