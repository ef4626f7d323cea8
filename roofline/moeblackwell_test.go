package roofline

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// TRT-LLM-gen's default token tile follows FlashInfer v0.6.12's launcher:
// the power of two at or above tokens x top-k / local experts, clamped to
// 8-128, then the next smaller candidate (the smallest of the set).
func TestTRTLLMDefaultTileTokens(t *testing.T) {
	for _, tc := range []struct {
		tokens, topK, experts, want float64
	}{
		{1, 8, 128, 8},      // 0.06 a expert: 8, no smaller candidate
		{128, 8, 128, 8},    // 8: 8
		{192, 8, 128, 8},    // 12 -> 16, then 8
		{2048, 8, 128, 64},  // 128 -> 128, then 64
		{16384, 8, 128, 64}, // 1,024 clamped to 128, then 64
		{1024, 8, 16, 64},   // EP8 of 128 experts: 512 a local expert
	} {
		if got := trtllmDefaultTileTokens(tc.tokens, tc.topK, tc.experts); got != tc.want {
			t.Errorf("tile(%v tokens, top-%v, %v experts) = %v, want %v", tc.tokens, tc.topK, tc.experts, got, tc.want)
		}
	}
}

// The ops a FlashInfer MoE
// layer moves inside its kernels: on B200 with Kernels.MoE set, the
// Triton path's alignment (moe_shuffling) costs nothing, the monolithic
// TRT-LLM kernel routes inside (moe_gating_routing_topk free) while the
// modular one and CUTLASS leave vLLM's routing kernel priced, and the
// grouped GEMM grows with the tokens. Without Kernels.MoE, and on Hopper,
// nothing changes.
func TestFlashInferMoEOps(t *testing.T) {
	b200, err := spec.LookupDevice("b200")
	if err != nil {
		t.Fatal(err)
	}
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	shuffle := spec.Op{Name: spec.OpMoEShuffling, Family: spec.FamilyMoE, Kernels: 1, Width: 2048, TopK: 8, LocalExperts: 128, Experts: 128, ElemBytes: 2}
	routing := spec.Op{Name: spec.OpMoERoutingTopK, Family: spec.FamilyMoE, Kernels: 3, Width: 128, TopK: 8, ElemBytes: 4}
	gg := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: 2048, ExpertWidth: 768, LocalExperts: 128, Experts: 128, TopK: 8, ElemBytes: 2}
	at := func(d *spec.Device, kernel string, o *spec.Op, tokens float64) float64 {
		r := Roofline{Device: NewDevice(d), Compiled: true, Kernels: Kernels{MoE: MoEKernels{}.With(kernel)}}
		x := []float64{tokens}
		if o.Name == spec.OpMoEGroupedGEMM {
			x = []float64{tokens * 8, tokens * 8 / 128, 0, tokens}
		}
		return r.KernelMs(o, x)
	}
	for _, k := range []string{MoEFlashInferTRTLLM, MoEFlashInferTRTLLMModular, MoEFlashInferCutlass} {
		if ms := at(b200, k, &shuffle, 64); ms != 0 {
			t.Errorf("%s: moe_shuffling %v ms, want 0 (inside FlashInfer)", k, ms)
		}
		want0 := k == MoEFlashInferTRTLLM
		if ms := at(b200, k, &routing, 64); (ms == 0) != want0 {
			t.Errorf("%s: routing %v ms (free: %v)", k, ms, want0)
		}
		if a, b := at(b200, k, &gg, 64), at(b200, k, &gg, 4096); !(a > 0 && b > a) {
			t.Errorf("%s: grouped GEMM %v ms at 64 tokens, %v at 4,096", k, a, b)
		}
	}
	for _, d := range []*spec.Device{b200, h100} {
		if d == h100 {
			if a, b := at(d, MoEFlashInferTRTLLM, &gg, 64), at(d, "", &gg, 64); a != b {
				t.Errorf("h100: grouped GEMM %v ms with Kernels.MoE set, %v without", a, b)
			}
		}
		if ms := at(d, "", &shuffle, 64); ms <= 0 {
			t.Errorf("%s default: moe_shuffling %v ms", d.Name, ms)
		}
	}
}

func TestKernelsForMoE(t *testing.T) {
	for _, tc := range []struct {
		arch, version, want string
	}{
		{spec.ArchBlackwell, "0.24.0", MoEFlashInferTRTLLM},
		{spec.ArchBlackwell, "0.25.1rc1", MoEFlashInferTRTLLM},
		{spec.ArchBlackwell, "1.0.0", MoEFlashInferTRTLLM},
		{spec.ArchBlackwell, "0.22.0", ""},
		{spec.ArchBlackwell, "", ""},
	} {
		if got := KernelsFor(tc.arch, tc.version).MoE; got.BF16 != tc.want || got.FP8 != tc.want || got.FP8Block != tc.want || got.FP8BlockEP != tc.want {
			t.Errorf("KernelsFor(%s, %q).MoE = %+v, want %q for every format", tc.arch, tc.version, got, tc.want)
		}
	}
}

func TestMoEKernel(t *testing.T) {
	for src, want := range map[string]string{
		"vllm_unquantizedfusedmoe_flashinfer_trtllm_trtllmbf16experts":     MoEFlashInferTRTLLM,
		"vllm_modeloptfp8moe_flashinfer_trtllm_trtllmfp8expertsmonolithic": MoEFlashInferTRTLLM,
		"vllm_fp8moe_flashinfer_trtllm_trtllmfp8expertsmodular":            MoEFlashInferTRTLLMModular,
		"vllm_unquantizedfusedmoe_flashinfer_cutlass_flashinferexperts":    MoEFlashInferCutlass,
		"vllm_unquantizedfusedmoe_triton_tritonexperts":                    "",
		"vllm_compressedtensorswna16marlinmoe_marlin_marlinexperts":        "",
		"vllm_fused_moe": "",
	} {
		if got := MoEKernel(src); got != want {
			t.Errorf("MoEKernel(%s) = %q, want %q", src, got, want)
		}
	}
}
