package cost

import (
	"math"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// FlashInferMoERowMs prices one balanced moe row of AIConfigurator's vLLM
// 0.24.0 tables that ran one of FlashInfer's kernels on a Blackwell device
// (roofline/moeblackwell.go) as the simulator prices a served MoE layer on
// that kernel: moe_gating_routing_topk (zero inside TRT-LLM's monolithic
// kernel) plus moe_grouped_gemm, which carries the rest of the layer. The
// collector (collector/vllm/collect_moe.py at ai-dynamo/aiconfigurator
// d5bad971c) times FusedMoE.forward on router logits in one CUDA-graph
// replay, so a row holds the routing, the activations' quantization, the
// experts and the finalize: the work of a served layer but its gating
// GEMM. ok is false when the device model has no FlashInfer terms for the
// row (another device, kernel or dtype).
func FlashInferMoERowMs(r roofline.Roofline, m *kerneldb.MoERow) (ms float64, ok bool) {
	routingMs, gg, x, ok := flashInferMoERow(r, m)
	if !ok {
		return 0, false
	}
	r.Kernels.MoE = roofline.MoEKernels{}.With(roofline.MoEKernel(m.KernelSource))
	return routingMs + r.TimeMs(&gg, x, spec.KernelOnly), true
}

// flashInferMoERow returns what FlashInferMoERowMs prices row m with: the
// routing's time (ms), the grouped-GEMM op and its features.
func flashInferMoERow(r roofline.Roofline, m *kerneldb.MoERow) (routingMs float64, gg spec.Op, x []float64, ok bool) {
	if r.Device == nil || r.Device.Arch != spec.ArchBlackwell {
		return 0, gg, nil, false
	}
	kernel := roofline.MoEKernel(m.KernelSource)
	r.Kernels.MoE = roofline.MoEKernels{}.With(kernel)
	gg = spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: m.Hidden, ExpertWidth: max(m.InterSize/m.MoETP, 1),
		LocalExperts: max(m.Experts/m.MoEEP, 1), Experts: m.Experts, TopK: m.TopK}
	switch m.Dtype {
	case "bfloat16":
		gg.ElemBytes = 2
	case "fp8", "fp8_block":
		gg.ElemBytes, gg.FP8, gg.FP8Block = 1, true, m.Dtype == "fp8_block"
	default:
		return 0, gg, nil, false
	}
	if _, found := r.Device.Curves.FlashInferMoETerms(kernel, m.Dtype); !found {
		return 0, gg, nil, false
	}
	tokens := float64(m.NumTokens)
	routed := tokens * float64(m.TopK) / float64(m.MoEEP)
	routing := spec.Op{Name: spec.OpMoERoutingTopK, Family: spec.FamilyMoE, Kernels: 3, Width: m.Experts, TopK: m.TopK, ElemBytes: 4}
	x = []float64{routed, math.Ceil(routed / float64(gg.LocalExperts)), 0, tokens}
	return r.TimeMs(&routing, []float64{tokens}, spec.KernelOnly), gg, x, true
}
