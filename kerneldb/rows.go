package kerneldb

// Row is what every measured row carries: where it was measured, with
// which kernel, and how long it took.
type Row struct {
	Device       string // the GPU's name as CUDA reports it ("NVIDIA H100 80GB HBM3")
	Version      string // vLLM version of the measuring stack
	KernelSource string // the kernel vLLM ran (e.g. torch.nn.functional.linear, CutlassFP8ScaledMMLinearKernel)
	LatencyMs    float64
}

// GEMMRow is one row of gemm_perf: tokens x K times K x N in Dtype.
type GEMMRow struct {
	Row
	Dtype   string // bfloat16, fp8, fp8_block, nvfp4, ...
	M, N, K int
}

// AttentionRow is one row of context_attention_perf (Context) or
// generation_attention_perf: Batch sequences of ISL prompt tokens; a
// generation row decodes token Step+1 of each, so its KV length is
// ISL+Step.
type AttentionRow struct {
	Row
	Context                 bool
	Batch, ISL, Step        int
	Heads, KVHeads, HeadDim int
	AttnDtype, KVCacheDtype string
	WindowSize              int // 0: full attention (the column is optional)
}

// KVLen is the KV length a generation row attends over.
func (r *AttentionRow) KVLen() int { return r.ISL + r.Step }

// MoERow is one row of moe_perf: a fused-MoE layer of NumTokens tokens on
// one GPU of a MoE group split TP x EP, routed by Distribution (balanced
// or power_law_<alpha>). InterSize is the whole expert width (the GPU
// holds InterSize/TP of it) and the GPU holds Experts/EP experts.
type MoERow struct {
	Row
	Dtype                        string
	NumTokens, Hidden, InterSize int
	TopK, Experts, MoETP, MoEEP  int
	Distribution                 string
}

// AllReduceRow is one row of custom_allreduce_perf: vLLM's custom
// all-reduce of MessageSize elements of Dtype over GPUs, replayed in a
// CUDA graph (Graph) or launched eagerly.
type AllReduceRow struct {
	Row
	Dtype       string
	GPUs        int
	MessageSize int // elements (bfloat16: 2 bytes each)
	Graph       bool
	Backend     string
}

// MLARow is one row of the MLA tables: multi-head latent attention
// (DeepSeek style) of Heads heads at tensor-parallel TP, Batch sequences
// of ISL tokens (context) or decoding step Step (generation). Module rows
// (mla_*_module_perf) time the whole attention module of Model, the
// others the attention kernel.
type MLARow struct {
	Row
	Context, Module               bool
	Dtype, KVCacheDtype, GEMMType string
	Model                         string
	Heads, Batch, ISL, TP, Step   int
}
