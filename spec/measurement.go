package spec

// Measurement types: how an operator's time was taken (docs/formats.md). They
// must never be mixed in one predictor.
const (
	// CUDAEvent is wall time between CUDA events around an eager op: it
	// includes launch gaps.
	CUDAEvent = "CUDA_EVENT"
	// KernelOnly is the sum of GPU kernel durations: the family for
	// CUDA-graph replay.
	KernelOnly = "KERNEL_ONLY"
	// CPUTime is an op timed on the host CPU (the torch worker without a GPU).
	CPUTime = "CPU"
)

// Gating runtime contexts of MoE gating profiles.
const (
	GatingPrefillHot = "prefill_hot"
	GatingStandalone = "standalone_legacy"
	// RoutingPathUniform is the routing path that assigns experts uniformly
	// (no router softmax); RoutingPathStandard is vLLM's fused top-k.
	RoutingPathUniform  = "uniform_topk"
	RoutingPathStandard = "standard_fused_topk"
)
