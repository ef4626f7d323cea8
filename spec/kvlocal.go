package spec

// KV-cache sizing of local-attention layers, as vLLM V1's hybrid KV cache
// manager does it (docs.vllm.ai, design "Hybrid KV Cache Manager"): a full
// attention layer keeps every token of a sequence, a sliding-window layer
// (Gemma-2/3, Mistral) only its last window tokens, a chunked-local layer
// (Llama-4) only the current chunk; one pool of blocks serves every layer.
// ftk counts that pool in blocks of blockSize tokens of a stage's full
// attention layers (KVBlockBytes), and a sequence's local layers take
// LocalKVBlocks of them on top of the blocks its tokens fill. vLLM groups
// layers into equal-sized groups, one block table each; ftk rounds the
// local layers' share once per sequence instead, a stated approximation
// (within one block per group).

// KVLayers returns the full- and local-attention layers of the most loaded
// pipeline stage (the first). A stage whose layers are all local is
// counted as full: vLLM's sliding-window manager then frees the blocks
// that fall out of the window, which ftk does not model (it keeps them).
func (m *Model) KVLayers(l Layout) (full, local int) {
	first, end := l.Normalize().StageLayers(m, 0)
	for i := first; i < end; i++ {
		if m.IsLocalAttentionLayer(i) {
			local++
		} else {
			full++
		}
	}
	if full == 0 {
		return local, 0
	}
	return full, local
}

// KVBlockBytes is the bytes of one KV block on one GPU: blockSize tokens
// of the stage's full-attention layers (every layer for a model without
// local attention).
func (m *Model) KVBlockBytes(l Layout, blockSize int) int64 {
	full, _ := m.KVLayers(l)
	return int64(full) * m.KVBytesPerTokenLayer(l.Normalize().TP) * int64(blockSize)
}

// LocalKVBlocks is the blocks (of KVBlockBytes) the local-attention layers
// of one sequence of tokens tokens hold: the blocks its last window tokens
// span (at most one more than the window fills; for a chunked layer the
// chunk, an upper bound), never more than the sequence's own, scaled from
// the local to the full layers and rounded up. 0 without local layers.
func (m *Model) LocalKVBlocks(l Layout, tokens, blockSize int) int {
	full, local := m.KVLayers(l)
	if local == 0 || tokens <= 0 || blockSize <= 0 {
		return 0
	}
	n := min((tokens+blockSize-1)/blockSize, (m.AttentionWindow+blockSize-1)/blockSize+1)
	return (local*n + full - 1) / full
}
