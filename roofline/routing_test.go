package roofline

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// TestFusedTopKAgainstPublished prices vLLM's standard top-k routing
// (topk_softmax plus the renormalisation, Roofline.routingCurve) against
// the published router kernel times it can be held to, and keeps the
// profilers' uniform path on its own fitted curve.
func TestFusedTopKAgainstPublished(t *testing.T) {
	// Qwen3-30B-A3B's router output: 128 experts, top-8.
	std := spec.Op{Name: spec.OpMoERoutingTopK, Family: spec.FamilyMoE, Kernels: 3, Width: 128, TopK: 8, ElemBytes: 4}
	us := func(dev string, o spec.Op, tokens float64) float64 {
		d, err := LookupDevice(dev)
		if err != nil {
			t.Fatal(err)
		}
		return Roofline{Device: d}.KernelMs(&o, []float64{tokens}) * 1e3
	}
	for _, tc := range []struct {
		name       string
		dev        string
		tokens     float64
		loUs, hiUs float64
		source     string
	}{
		// Megatron-LM PR #6456 (August 2026), CUDA-graph replay, [256, 128]
		// fp32 router output, top-8: 4.10 us as one fused kernel, 16.41 us
		// as four PyTorch kernels. vLLM's three kernels lie between.
		{"decode batch, H100", "h100", 256, 4.10, 16.41, "Megatron-LM PR #6456"},
		// A prefill chunk reads 2,048 x 128 logits (1 MB): a few
		// microseconds of bandwidth beside the launches, not the 1.5 ms the
		// uniform rows' extrapolated slope gave on an RTX 4090 D.
		{"prefill chunk, RTX 4090 D", "rtx4090d", 2048, 4.10, 16.41, "bandwidth bound"},
		{"8 tokens, RTX 4090 D", "rtx4090d", 8, 4.10, 16.41, "Megatron-LM PR #6456"},
	} {
		got := us(tc.dev, std, tc.tokens)
		t.Logf("%-28s %5.0f tokens: ftk %.2f us (bounds %.2f-%.2f us, %s)", tc.name, tc.tokens, got, tc.loUs, tc.hiUs, tc.source)
		if got < tc.loUs || got > tc.hiUs {
			t.Errorf("%s: fused top-k %.2f us, want within %.2f-%.2f us (%s)", tc.name, got, tc.loUs, tc.hiUs, tc.source)
		}
	}
	// The uniform path keeps the routing class's curve: the H800 profiles
	// time it at 52-56 us for top-8 at 1-64 tokens (KERNEL_ONLY).
	d, _ := LookupDevice("h800")
	uni := Roofline{Device: d}.ContextTimeMs(&std, []float64{8}, spec.KernelOnly, spec.GatingPrefillHot, spec.RoutingPathUniform) * 1e3
	if uni < 52*0.85 || uni > 56*1.15 {
		t.Errorf("uniform top-8 routing on the H800 %.1f us, want 52-56 us within 15%% (profile rows)", uni)
	}
}
