package spec

import (
	"fmt"
	"strings"
)

// What the host issues for a forward pass and what issuing costs: the
// vocabulary of the host timeline (docs/host-timeline.md). The inventory
// of what vLLM issues per operator (roofline.IssueOf) and the default
// costs with their calibration are the roofline package's.

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

// ParseKernelKind resolves a kernel kind's name (KernelKind.String).
func ParseKernelKind(name string) (KernelKind, bool) {
	for _, k := range KernelKinds() {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// OpIssue is what the host issues for one op, once.
type OpIssue struct {
	// Modules counts Python module frames (nn.Module.__call__, CustomOp
	// dispatch, the decoder layer's own forward on its first op).
	Modules int
	// Calls counts dispatcher calls that launch no kernel.
	Calls int
	// Kernels counts launches by kind.
	Kernels [NumKernelKinds]int
}

// KernelCount is the number of GPU kernels.
func (o OpIssue) KernelCount() int {
	n := 0
	for _, k := range o.Kernels {
		n += k
	}
	return n
}

// IssueCosts are the host CPU costs of issuing a forward pass, in
// microseconds, on one host. An op costs
//
//	Modules x ModuleUs + Calls x CallUs + sum over kinds of Kernels[k] x KernelUs[k]
//
// (OpIssue; roofline.IssueOf is the inventory). A CUDA graph replay costs GraphLaunchUs in full
// graph mode; piecewise mode pays PieceLaunchUs per captured piece plus
// the eager attention ops between pieces.
type IssueCosts struct {
	ModuleUs      float64
	CallUs        float64
	KernelUs      [NumKernelKinds]float64
	GraphLaunchUs float64
	PieceLaunchUs float64
	// Source says where the figures come from (printed in summaries).
	Source string
}

// Scale multiplies every cost by f.
func (c *IssueCosts) Scale(f float64) {
	c.ModuleUs *= f
	c.CallUs *= f
	for k := range c.KernelUs {
		c.KernelUs[k] *= f
	}
	c.GraphLaunchUs *= f
	c.PieceLaunchUs *= f
}

// OpUs is the host time to issue op i once, microseconds.
func (c *IssueCosts) OpUs(i OpIssue) float64 {
	us := float64(i.Modules)*c.ModuleUs + float64(i.Calls)*c.CallUs
	for k, n := range i.Kernels {
		us += float64(n) * c.KernelUs[k]
	}
	return us
}

// Describe renders the per-kind figures for people.
func (c *IssueCosts) Describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %.1f us, call %.1f us", c.ModuleUs, c.CallUs)
	for k, us := range c.KernelUs {
		fmt.Fprintf(&b, ", %s %.1f us", KernelKind(k), us)
	}
	fmt.Fprintf(&b, ", graph launch %.1f us, piece launch %.1f us", c.GraphLaunchUs, c.PieceLaunchUs)
	return b.String()
}
