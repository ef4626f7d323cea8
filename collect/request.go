package collect

import (
	"fmt"
	"math"
	"sort"

	"github.com/ftk-dev/ftk/spec"
)

// Timing methods a backend is asked for, as the worker protocol names
// them, and the measurement types they produce.
const (
	TimingCUDAEvent  = "cuda_event"  // spec.CUDAEvent
	TimingKernelOnly = "kernel_only" // spec.KernelOnly
	TimingCUDAGraph  = "cuda_graph"  // spec.KernelOnly timed as CUDA-graph replays (TorchOptions.GraphTiming)
	TimingCPU        = "cpu"         // spec.CPUTime: an op timed on the host CPU
	TimingHost       = "host"        // spec.HostWall: host-side engine work
	TimingIssue      = "issue"       // host issue costs (spec.IssueOps), GPU queue kept busy
)

// timingOf maps a measurement type to the protocol's timing method.
func timingOf(measurement string) string {
	switch measurement {
	case spec.KernelOnly:
		return TimingKernelOnly
	case spec.CPUTime:
		return TimingCPU
	case spec.HostWall:
		return TimingHost
	}
	return TimingCUDAEvent
}

// Request asks a backend to time one operator at one shape: one line of
// the worker protocol (collect/worker/README.md).
type Request struct {
	ID      string  `json:"id"`
	Family  string  `json:"family"`
	Op      string  `json:"op"`
	Shape   OpShape `json:"shape"`
	Warmup  int     `json:"warmup"`
	Repeats int     `json:"repeats"`
	Timing  string  `json:"timing"`

	op          *spec.Op  // the operator, for the synthetic backend
	features    []float64 // its features, spec.OpFeatures order
	measurement string
}

// OpShape is everything a worker needs to build an operator: the per-GPU
// dimensions of spec.Op and the point of the sweep.
type OpShape struct {
	Kernels   int  `json:"kernels,omitempty"`
	K         int  `json:"k,omitempty"`
	N         int  `json:"n,omitempty"`
	Width     int  `json:"width,omitempty"`
	Hidden    int  `json:"hidden"`
	TP        int  `json:"tp"` // tensor-parallel degree of the layout
	ElemBytes int  `json:"elem_bytes,omitempty"`
	Tokens    int  `json:"tokens"`
	Vocab     int  `json:"vocab,omitempty"` // vocabulary rows on this GPU (embedding)
	QKNorm    bool `json:"qk_norm,omitempty"`
	// Attention heads on this GPU and the batch's sequences.
	QHeads          int   `json:"q_heads,omitempty"`
	KVHeads         int   `json:"kv_heads,omitempty"`
	HeadDim         int   `json:"head_dim,omitempty"`
	BlockSize       int   `json:"block_size,omitempty"`
	PrefillChunks   []int `json:"prefill_chunks,omitempty"`
	PrefillContexts []int `json:"prefill_contexts,omitempty"`
	DecodeContexts  []int `json:"decode_contexts,omitempty"`
	// MoE: experts, the local experts' token counts and the runtime contract.
	NumExperts    int    `json:"num_experts,omitempty"`
	LocalExperts  int    `json:"local_experts,omitempty"`
	TopK          int    `json:"top_k,omitempty"`
	ExpertWidth   int    `json:"expert_width,omitempty"`
	ExpertCounts  []int  `json:"expert_counts,omitempty"`
	GatingContext string `json:"gating_context,omitempty"`
	RoutingPath   string `json:"routing_path,omitempty"`
	// Collectives.
	Workers   int   `json:"workers,omitempty"`
	SizeBytes int64 `json:"size_bytes,omitempty"`
	// Backend is the EP exchange's all2all backend (ep_dispatch,
	// ep_combine), DPRanks its data-parallel ranks.
	Backend string `json:"backend,omitempty"`
	DPRanks int    `json:"dp_ranks,omitempty"`
	// Host: one engine step's batch.
	BatchSize     int `json:"batch_size,omitempty"`
	PrefillTokens int `json:"num_prefill_tokens,omitempty"`
	DecodeTokens  int `json:"num_decode_tokens,omitempty"`
}

// newRequest builds the request that times operator o of shape s; the
// attention shapes' KV cache is paged in blocks of blockSize tokens (the
// sweep's engine limit).
func newRequest(m *spec.Model, s *Shape, o *spec.Op, blockSize int, measurement string, warmup, repeats int) *Request {
	sh := OpShape{
		Kernels: o.Kernels, K: o.K, N: o.N, Width: o.Width, Hidden: m.HiddenSize, ElemBytes: o.ElemBytes,
		TP: s.Layout.TP, Tokens: s.Tokens, QKNorm: m.QKNorm,
		QHeads: o.QHeads, KVHeads: o.KVHeads, HeadDim: o.HeadDim,
		LocalExperts: o.LocalExperts, TopK: o.TopK, ExpertWidth: o.ExpertWidth,
		Workers: o.Workers, SizeBytes: s.SizeBytes, Backend: o.Backend, DPRanks: o.DPRanks,
		BatchSize: s.BatchSize, PrefillTokens: s.PrefillTokens, DecodeTokens: s.DecodeTokens,
	}
	switch o.Family {
	case spec.FamilyAttention:
		sh.BlockSize = blockSize
		sh.PrefillChunks, sh.PrefillContexts, sh.DecodeContexts = s.PrefillChunks, s.PrefillContexts, s.DecodeContexts
	case spec.FamilyMoE:
		sh.NumExperts, sh.TopK = m.NumExperts, m.TopK
		sh.ExpertCounts = s.Load.Counts
		sh.GatingContext, sh.RoutingPath = s.GatingContext, s.RoutingPath
	case spec.FamilyCPU:
		sh.Vocab = m.VocabSize // the sampler sees the gathered logits
	}
	if o.Name == spec.OpEmb {
		sh.Vocab = m.VocabSize / s.Layout.TP
	}
	return &Request{
		ID: s.ID + ":" + o.Name + ":" + measurement, Family: string(o.Family), Op: o.Name, Shape: sh,
		Warmup: warmup, Repeats: repeats, Timing: timingOfShape(s, measurement),
		op: o, features: s.Features(o), measurement: measurement,
	}
}

// Stats summarise the repeated timings of one operator, in milliseconds.
type Stats struct {
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"` // population standard deviation
	Count  int     `json:"count"`
}

// summarize computes Stats of samples (milliseconds).
func summarize(samples []float64) Stats {
	n := len(samples)
	if n == 0 {
		return Stats{}
	}
	v := append([]float64(nil), samples...)
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(n)
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return Stats{Min: v[0], Max: v[n-1], Mean: mean, Median: spec.PercentileSorted(v, 50), Std: math.Sqrt(ss / float64(n)), Count: n}
}

// Response is a backend's answer to one Request.
type Response struct {
	ID    string `json:"id"`
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Stats Stats  `json:"stats"`
	Impl  string `json:"impl,omitempty"` // which implementation ran: torch_plain, vllm_fused_moe, flashinfer, ...
	// KernelSource names the kernel or call that ran (spec.KernelOrigin
	// reads its origin): "torch:rms_norm", "inductor:rms_norm",
	// "vllm._C.rms_norm", "roofline".
	KernelSource string `json:"kernel_source,omitempty"`
	Device       string `json:"device,omitempty"` // cpu, cuda:0
	DType        string `json:"dtype,omitempty"`  // bfloat16, float32
}

func (r *Response) validate() error {
	st := r.Stats
	switch {
	case !r.OK:
		return fmt.Errorf("%s", r.Error)
	case st.Count < 1:
		return fmt.Errorf("response %s: count %d < 1", r.ID, st.Count)
	case !(st.Min >= 0) || st.Min > st.Median || st.Median > st.Max || math.IsInf(st.Max, 0):
		return fmt.Errorf("response %s: inconsistent stats min=%g median=%g max=%g", r.ID, st.Min, st.Median, st.Max)
	}
	return nil
}

// timingOfShape is the timing method of a shape's requests: host issue
// costs have their own (the worker times issues, not kernels).
func timingOfShape(s *Shape, measurement string) string {
	if s.Kind == KindIssue {
		return TimingIssue
	}
	return timingOf(measurement)
}
