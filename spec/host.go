package spec

// Host-side (CPU) parts of an engine step, as named by the CPU overhead
// profile format (docs/formats.md). Each is an operator of family cpu_overhead
// with the features of OpFeatures(OpCPUOverhead).
const (
	OpCPUSchedule       = "cpu_schedule"
	OpCPUPrepareInputs  = "cpu_prepare_inputs"
	OpCPUSampler        = "cpu_sampler"
	OpCPUProcessOutputs = "cpu_process_outputs"
	OpCPURayComm        = "cpu_ray_comm"
)

// HostWall is the measurement type of host-side wall-clock timings.
const HostWall = "HOST_WALL"

// Host issue-cost operators (family cpu_overhead), measured by collect's
// torch worker with the GPU queue kept busy: the host time of one module
// call, one dispatcher call without a kernel, one kernel of each kind
// (KernelKind), one CUDA graph replay and one plain-torch decoder layer.
// A CPU run times the Python and dispatcher part only and is labelled
// measurement type CPU.
const (
	OpIssueCall       = "issue_call"
	OpIssueModule     = "issue_module"
	OpIssueATen       = "issue_aten"
	OpIssueCustom     = "issue_custom"
	OpIssueTriton     = "issue_triton"
	OpIssueAttention  = "issue_attention"
	OpIssueCollective = "issue_collective"
	OpIssueGraph      = "issue_graph"
	OpIssueLayer      = "issue_layer"
)

// IssueOps lists the issue-cost operators, kernel kinds in KernelKind order
// after the call and module ops.
func IssueOps() []string {
	return []string{OpIssueCall, OpIssueModule, OpIssueATen, OpIssueCustom, OpIssueTriton,
		OpIssueAttention, OpIssueCollective, OpIssueGraph, OpIssueLayer}
}

// IssueOpOfKind names the issue-cost operator of kernel kind k.
func IssueOpOfKind(k KernelKind) string { return IssueOps()[2+int(k)] }

// IsHostOp reports whether op is a host-side operator (family cpu_overhead).
func IsHostOp(op string) bool {
	switch op {
	case OpCPUOverhead, OpCPUSchedule, OpCPUPrepareInputs, OpCPUSampler, OpCPUProcessOutputs, OpCPURayComm:
		return true
	}
	for _, o := range IssueOps() {
		if o == op {
			return true
		}
	}
	return false
}
