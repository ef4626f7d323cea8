package spec

// Host-side (CPU) parts of an engine step, as named by the CPU overhead
// profile format (FORMATS.md). Each is an operator of family cpu_overhead
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
