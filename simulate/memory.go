package simulate

import (
	"fmt"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// nonTorchBytes is memory vLLM's budget loses outside PyTorch tensors: the
// CUDA context, NCCL buffers and CUDA graph pools. An estimate (vLLM
// measures it at start-up; typical figures are 0.5 to 1.5 GiB).
const nonTorchBytes = 1 << 30

// activationBytes estimates the peak activation memory of one GPU for a
// forward pass of tokens tokens and seqs sampled sequences: the residual
// stream and hidden state, the QKV output and the MLP (or routed experts')
// intermediate tensors in BF16, and FP32 logits.
func activationBytes(m *spec.Model, l spec.Layout, tokens, seqs int) int64 {
	l = l.Normalize()
	qkv := (m.NumHeads + 2*m.NumKVHeads) * m.HeadDim / l.TP
	mlp := m.IntermediateSize / l.TP
	if m.IsMoE() {
		mlp = max(mlp, m.TopK*m.MoEIntermediateSize/l.MoETP())
	}
	perToken := int64(2*m.HiddenSize+qkv+3*mlp) * 2
	logits := int64(seqs) * int64(m.VocabSize/l.TP) * 4
	return int64(tokens)*perToken + logits
}

// planMemory sizes the KV cache of one replica as vLLM does: the budget
// gpu_memory_utilization x memory, less weights, peak activations and
// overheads, in blocks of block_size tokens (of the full-attention layers
// when some layers attend locally: spec.Model.KVBlockBytes). A speculative
// decoding drafter (dr, nil for none) adds its own weights, and its layers'
// KV to every token's, as vLLM puts the draft layers' KV cache in the same
// block pool. It fails when the weights do not fit or when one sequence of
// max_model_len tokens would not fit.
func planMemory(m *spec.Model, l spec.Layout, d *spec.Device, e *runresult.EngineConfig, dr *spec.Drafter) (runresult.MemoryReport, error) {
	r := runresult.MemoryReport{
		DeviceBytes:     d.MemoryBytes(),
		BudgetBytes:     int64(e.GPUMemoryUtilization * float64(d.MemoryBytes())),
		WeightBytes:     m.WeightBytesPerGPU(l),
		ActivationBytes: activationBytes(m, l, e.MaxNumBatchedTokens, e.MaxNumSeqs),
		OverheadBytes:   nonTorchBytes,
		KVBytesPerToken: m.KVBlockBytes(l, 1),
		BlockSize:       e.BlockSize,
	}
	if dr != nil {
		r.WeightBytes += dr.WeightBytesPerGPU(l)
		r.KVBytesPerToken += dr.KVBytesPerToken(l)
	}
	gib := func(b int64) float64 { return float64(b) / (1 << 30) }
	if r.WeightBytes > r.BudgetBytes {
		return r, fmt.Errorf("simulate: %s weights need %.2f GiB per GPU on %s, more than gpu_memory_utilization %g of the %s's %.0f GiB (%.2f GiB): use more TP or PP, or a larger device",
			m.Name, gib(r.WeightBytes), l, e.GPUMemoryUtilization, d.Name, d.MemoryGiB, gib(r.BudgetBytes))
	}
	r.KVBytes = r.BudgetBytes - r.WeightBytes - r.ActivationBytes - r.OverheadBytes
	blockBytes := r.KVBytesPerToken * int64(e.BlockSize)
	if r.KVBytes > 0 {
		r.Blocks = int(r.KVBytes / blockBytes)
	}
	if e.NumGPUBlocksOverride > 0 {
		r.Blocks, r.Overridden = e.NumGPUBlocksOverride, true
	}
	if r.Blocks <= 0 {
		return r, fmt.Errorf("simulate: no memory left for the KV cache: of %.2f GiB (gpu_memory_utilization %g of %s), weights take %.2f GiB, activations %.2f GiB and overheads %.2f GiB: use more TP or PP, a larger device, or fewer max_num_batched_tokens",
			gib(r.BudgetBytes), e.GPUMemoryUtilization, d.Name, gib(r.WeightBytes), gib(r.ActivationBytes), gib(r.OverheadBytes))
	}
	if need := (e.MaxModelLen+e.BlockSize-1)/e.BlockSize + m.LocalKVBlocks(l, e.MaxModelLen, e.BlockSize); need > r.Blocks {
		return r, fmt.Errorf("simulate: max_model_len %d needs %d KV blocks for one sequence, more than the %d the KV cache holds: lower max_model_len or give the cache more memory",
			e.MaxModelLen, need, r.Blocks)
	}
	if e.KVOffloadingSize > 0 {
		// vLLM's CPUOffloadingSpec: cpu_bytes_to_use over one block's
		// bytes on every GPU of the engine (world size TP x PP).
		engineBlockBytes := blockBytes * int64(l.TP*l.PP)
		r.HostBlocks = int(e.KVOffloadingSize * (1 << 30) / float64(engineBlockBytes))
		r.HostLinkGBps = d.HostLinkGBps
		if r.HostBlocks < 1 {
			return r, fmt.Errorf("simulate: kv_offloading_size %g GiB holds no KV block of %d bytes (%d tokens on %d GPUs): give more GiB", e.KVOffloadingSize, engineBlockBytes, e.BlockSize, l.TP*l.PP)
		}
	}
	return r, nil
}
