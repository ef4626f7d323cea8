package spec

// KernelKind is how the host issues one GPU kernel.
type KernelKind uint8

// Kernel kinds, cheapest to issue first.
const (
	// KernelATen is a PyTorch ATen op through the dispatcher (cuBLAS GEMMs,
	// elementwise, copies).
	KernelATen KernelKind = iota
	// KernelCustom is a vLLM custom CUDA op through torch.ops (_C, _moe_C).
	KernelCustom
	// KernelTriton is a Triton JIT kernel launched from its Python wrapper.
	KernelTriton
	// KernelAttention is an attention backend call through vLLM's wrapper
	// (forward-context lookup, metadata, FlashAttention / FlashInfer /
	// FlashMLA entry point).
	KernelAttention
	// KernelCollective is an NCCL or custom all-reduce call.
	KernelCollective
	NumKernelKinds
)

var kernelKindNames = [NumKernelKinds]string{"aten", "custom", "triton", "attention", "collective"}

func (k KernelKind) String() string {
	if k < NumKernelKinds {
		return kernelKindNames[k]
	}
	return "unknown"
}

// KernelKinds lists every kind, in order.
func KernelKinds() []KernelKind {
	out := make([]KernelKind, NumKernelKinds)
	for i := range out {
		out[i] = KernelKind(i)
	}
	return out
}
