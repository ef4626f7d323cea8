package runresult

// Output file names inside Outputs.Dir.
const (
	RequestsCSVFile   = "requests.csv"
	RequestsArrowFile = "requests.arrow"
	SummaryFile       = "summary.json"
	ConfigFile        = "config.yaml"
)

// MemoryReport is the per-GPU memory plan of one replica: how vLLM's
// gpu_memory_utilization share of the device splits into weights,
// activations, other overheads and the KV cache.
type MemoryReport struct {
	DeviceBytes int64 `json:"device_bytes"`
	// BudgetBytes is gpu_memory_utilization x device memory.
	BudgetBytes int64 `json:"budget_bytes"`
	// WeightBytes is the weights of the most loaded GPU.
	WeightBytes int64 `json:"weight_bytes"`
	// ActivationBytes estimates the peak activations of a forward pass of
	// max_num_batched_tokens (vLLM's profiling run).
	ActivationBytes int64 `json:"activation_bytes"`
	OverheadBytes   int64 `json:"overhead_bytes"`
	// KVBytes is the memory left for the KV cache.
	KVBytes int64 `json:"kv_bytes"`
	// KVBytesPerToken is what one token takes in the full-attention layers
	// of one GPU (every layer unless some attend locally; local layers
	// hold at most their window per sequence on top).
	KVBytesPerToken int64 `json:"kv_bytes_per_token"`
	BlockSize       int   `json:"block_size"`
	// Blocks is the KV-cache blocks of one replica (num_gpu_blocks).
	Blocks     int  `json:"blocks"`
	Overridden bool `json:"blocks_overridden,omitempty"`
	// HostBlocks is the host tier's KV blocks per replica
	// (kv_offloading_size over the bytes of one block on every GPU of the
	// replica; 0: no host tier), and HostLinkGBps the bandwidth one GPU
	// copies them at, each direction.
	HostBlocks   int     `json:"host_blocks,omitempty"`
	HostLinkGBps float64 `json:"host_link_gbps,omitempty"`
}

// ReplicaReport is one replica's engine statistics.
type ReplicaReport struct {
	Replica     int     `json:"replica"`
	Role        string  `json:"role,omitempty"`
	Steps       int64   `json:"steps"`
	Preemptions int64   `json:"preemptions"`
	KVBlocks    int     `json:"kv_blocks"`
	PeakKVUsage float64 `json:"peak_kv_usage"`
	// DummySteps and SyncWaitMs are a data-parallel MoE rank's dummy
	// batches and the time it waited for the slowest rank of each
	// lockstep step.
	DummySteps int64   `json:"dummy_steps,omitempty"`
	SyncWaitMs float64 `json:"sync_wait_ms,omitempty"`
}

// BreakdownRow is one component's part of the engine time.
type BreakdownRow struct {
	Component string `json:"component"`
	// WallMs is the component's part of the stage wall time: device
	// components in full, launch beyond the device time, host time the
	// forward pass does not hide. The rows add up to Breakdown.WallMs.
	WallMs float64 `json:"wall_ms"`
	Share  float64 `json:"share"`
	// MeanMs is WallMs per stage step; ModelledMeanMs is the component's
	// modelled time per stage step, hidden or not (launch and host time
	// can exceed their wall share).
	MeanMs         float64 `json:"mean_ms"`
	ModelledMeanMs float64 `json:"modelled_mean_ms"`
}

// Breakdown is where the engines of one role spend their step time.
type Breakdown struct {
	Role string `json:"role"`
	// StageSteps counts steps on every pipeline stage of every engine.
	StageSteps int64          `json:"stage_steps"`
	WallMs     float64        `json:"wall_ms"`
	Rows       []BreakdownRow `json:"rows"`
	// HostBoundSteps are stage steps whose kernel launches took longer than
	// the GPU work; GraphSteps replayed CUDA graphs.
	HostBoundSteps int64 `json:"host_bound_steps"`
	GraphSteps     int64 `json:"graph_steps"`
}
