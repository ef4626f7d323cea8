package runresult

// Execution modes (EngineConfig.ExecutionMode): how the host issues a
// step's kernels (docs/design.md section 2).
const (
	// ExecEager launches every kernel of every layer from the host
	// (vLLM's --enforce-eager): launch = kernels x per-launch cost, and a
	// step whose kernels are shorter than their launches is host-bound.
	ExecEager = "eager"
	// ExecCUDAGraph replays a captured CUDA graph for decode-only batches
	// of up to the largest capture size (vLLM's FULL_DECODE_ONLY graph
	// mode): one graph launch, the batch padded to the next capture size.
	// Other batches run eagerly.
	ExecCUDAGraph = "cuda-graph"
	// ExecPiecewise captures the layers between attention ops (vLLM's
	// PIECEWISE graph mode) for any batch of up to the largest capture size
	// in tokens: attention kernels are launched eagerly, every other kernel
	// runs inside one graph launch per piece (layers + 1 pieces).
	ExecPiecewise = "piecewise"
	// ExecFullAndPiecewise is vLLM's FULL_AND_PIECEWISE graph mode, its
	// default since v0.11.0 (vllm-project/vllm#25444): decode-only batches
	// replay a full graph (as ExecCUDAGraph), other batches of up to the
	// largest capture size in tokens replay piecewise graphs (as
	// ExecPiecewise), larger ones run eagerly.
	ExecFullAndPiecewise = "full-and-piecewise"
)

// ExecutionModes lists the execution modes.
var ExecutionModes = []string{ExecEager, ExecCUDAGraph, ExecPiecewise, ExecFullAndPiecewise}
