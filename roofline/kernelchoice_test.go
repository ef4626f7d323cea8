package roofline

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// KernelsFor names the fused-MoE kernel of each weight format per vLLM
// release on Hopper (kernelchoice.go), Blackwell's one kernel for every
// format, and nothing where no rule applies.
func TestKernelsForHopperMoE(t *testing.T) {
	tr, fi := MoEKernelTriton, MoEFlashInferCutlass
	for _, tc := range []struct {
		arch, version string
		want          MoEKernels
	}{
		{spec.ArchHopper, "", MoEKernels{}},
		{spec.ArchHopper, "0.10.1", MoEKernels{}},
		{spec.ArchHopper, "0.9.2", MoEKernels{}},
		{spec.ArchHopper, "0.14.0", MoEKernels{BF16: tr, FP8: tr, FP8Dynamic: tr, FP8Block: tr, FP8BlockEP: tr}},
		{spec.ArchHopper, "0.16.1", MoEKernels{BF16: tr, FP8: tr, FP8Dynamic: tr, FP8Block: tr, FP8BlockEP: tr}},
		{spec.ArchHopper, "0.17.0", MoEKernels{BF16: tr, FP8: tr, FP8Dynamic: tr, FP8Block: tr, FP8BlockEP: tr, ConfigsBefore: "2026-03-07", ScaledDefault: true}},
		{spec.ArchHopper, "0.24.0", MoEKernels{BF16: tr, FP8: fi, FP8Dynamic: tr, FP8Block: tr, FP8BlockEP: fi, ConfigsBefore: "2026-07-13", ScaledDefault: true, BF16From024: true}},
		{spec.ArchBlackwell, "0.24.0", MoEKernels{}.With(MoEFlashInferTRTLLM)},
		{spec.ArchAmpere, "0.14.0", MoEKernels{}},
	} {
		if got := KernelsFor(tc.arch, tc.version).MoE; got != tc.want {
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

// The attention kernel follows the vLLM version on Hopper: FA3 as 0.24.0
// runs it from 0.24.0, 0.14.0's below it and when no version is given; on
// Ampere FA2 at every given version, the default (the attention classes'
// curves) without one; Blackwell keeps its default.
func TestKernelsForAttention(t *testing.T) {
	for _, tc := range []struct {
		arch, version, want string
	}{
		{spec.ArchHopper, "", ""},
		{spec.ArchHopper, "0.14.0", ""},
		{spec.ArchHopper, "0.23.9", ""},
		{spec.ArchHopper, "0.24.0", AttentionFA3},
		{spec.ArchHopper, "0.24", AttentionFA3},
		{spec.ArchHopper, "0.25.1", AttentionFA3},
		{spec.ArchHopper, "1.0.0", AttentionFA3},
		{spec.ArchBlackwell, "0.24.0", ""},
		{spec.ArchAmpere, "0.24.0", AttentionFA2},
		{spec.ArchAmpere, "0.14.0", AttentionFA2},
		{spec.ArchAmpere, "", ""},
		{spec.ArchAda, "0.24.0", ""},
	} {
		if got := KernelsFor(tc.arch, tc.version).Attention; got != tc.want {
			t.Errorf("KernelsFor(%q, %q).Attention = %q, want %q", tc.arch, tc.version, got, tc.want)
		}
	}
}

// A Hopper decode of one sequence over a long cache is priced as the
// table's kernel ran it: vLLM 0.24.0's FA3 splits one KV head's keys over
// more CTAs than 0.14.0's (AIConfigurator's H100 rows, 1 sequence, 8 query
// heads, 1 KV head, 131,071 cached tokens: 0.14.0 87.6 us, 0.24.0 51.4
// us; the fit prices them -7% and +20%), and a kernel the device has no terms for keeps the default.
func TestFA3ByKernel(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	o := spec.Op{Name: spec.OpAttnDecode, Family: spec.FamilyAttention, Kernels: 1, QHeads: 8, KVHeads: 1, HeadDim: 128, ElemBytes: 2}
	x := []float64{1, 131071}
	us := func(kernel string) float64 {
		r := Roofline{Device: NewDevice(h100), Compiled: true, Kernels: Kernels{Attention: kernel}}
		return r.TimeMs(&o, x, spec.KernelOnly) * 1e3
	}
	v014, v024, fa4 := us(""), us(AttentionFA3), us(AttentionFA4)
	t.Logf("0.14.0 %.1f us, 0.24.0 %.1f us", v014, v024)
	if v014 < 87.6*0.8 || v014 > 87.6*1.25 || v024 < 51.4*0.8 || v024 > 51.4*1.25 || v024 > 0.8*v014 {
		t.Errorf("one KV head at 131,071 tokens: 0.14.0 %.1f us (measured 87.6), 0.24.0 %.1f us (51.4); want each within 25%% (the fit's error on the point), 0.24.0 under 0.8 of 0.14.0", v014, v024)
	}
	if fa4 != us("") || us("") != v014 {
		t.Errorf("FA4 %.1f us, no kernel %.1f us: want both the default (0.14.0's) %.1f us", fa4, us(""), v014)
	}
}
