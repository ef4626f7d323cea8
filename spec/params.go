package spec

// Parameter and memory arithmetic. Counts are weights (biases included where
// the architecture has them); norms count their scale vectors.

// attentionParams is the weight count of one attention block, whole (TP=1).
func (m *Model) attentionParams() int64 {
	h := int64(m.HiddenSize)
	if m.IsMLA() {
		nh := int64(m.NumHeads)
		qk := int64(m.QKNopeHeadDim + m.QKRopeHeadDim)
		var q int64
		if m.QLoraRank > 0 {
			q = h*int64(m.QLoraRank) + int64(m.QLoraRank) + int64(m.QLoraRank)*nh*qk
		} else {
			q = h * nh * qk
		}
		kvA := h*int64(m.KVLoraRank+m.QKRopeHeadDim) + int64(m.KVLoraRank)
		kvB := int64(m.KVLoraRank) * nh * int64(m.QKNopeHeadDim+m.VHeadDim)
		o := nh * int64(m.VHeadDim) * h
		return q + kvA + kvB + o
	}
	q := int64(m.NumHeads * m.HeadDim)
	kv := int64(m.NumKVHeads * m.HeadDim)
	p := h*q + 2*h*kv + q*h
	if m.AttentionBias {
		p += q + 2*kv + h
	}
	if m.QKNorm {
		p += 2 * int64(m.HeadDim)
	}
	return p
}

func mlpParams(hidden, width int, gated bool) int64 {
	if gated {
		return 3 * int64(hidden) * int64(width)
	}
	return 2 * int64(hidden) * int64(width)
}

func (m *Model) expertParams() int64 {
	return mlpParams(m.HiddenSize, m.MoEIntermediateSize, m.GatedMLP)
}

func (m *Model) sharedExpertParams() int64 {
	w := m.SharedExpertIntermediateSize
	if w == 0 {
		w = m.MoEIntermediateSize
	}
	return int64(m.SharedExperts) * mlpParams(m.HiddenSize, w, m.GatedMLP)
}

// layerParams returns the total and the per-token active weights of layer i.
func (m *Model) layerParams(i int) (total, active int64) {
	base := m.attentionParams() + 2*int64(m.HiddenSize)
	if !m.IsMoELayer(i) {
		p := base + mlpParams(m.HiddenSize, m.IntermediateSize, m.GatedMLP)
		return p, p
	}
	gate := int64(m.HiddenSize) * int64(m.NumExperts)
	shared := m.sharedExpertParams()
	total = base + gate + shared + int64(m.NumExperts)*m.expertParams()
	active = base + gate + shared + int64(m.TopK)*m.expertParams()
	return total, active
}

func (m *Model) embeddingParams() int64 {
	e := int64(m.VocabSize) * int64(m.HiddenSize)
	if m.TiedEmbeddings {
		return e + int64(m.HiddenSize)
	}
	return 2*e + int64(m.HiddenSize)
}

// Params returns the total parameter count and the parameters active for one
// token (routed experts counted top-k times, embeddings and LM head included).
func (m *Model) Params() (total, active int64) {
	for i := 0; i < m.NumLayers; i++ {
		t, a := m.layerParams(i)
		total += t
		active += a
	}
	e := m.embeddingParams()
	return total + e, active + e
}

// kvHeadsPerGPU is the KV heads one TP rank holds; heads are replicated when
// TP exceeds their number, as vLLM does.
func (m *Model) kvHeadsPerGPU(tp int) int {
	if m.NumKVHeads >= tp {
		return m.NumKVHeads / tp
	}
	return 1
}

// layerWeightBytesPerGPU is the bytes of layer i's weights on one GPU.
func (m *Model) layerWeightBytesPerGPU(i int, l Layout) int64 {
	l = l.Normalize()
	tp := int64(l.TP)
	h := int64(m.HiddenSize)
	var attn int64
	if m.IsMLA() {
		attn = m.attentionParams() / tp
	} else {
		q := int64(m.NumHeads*m.HeadDim) / tp
		kv := int64(m.kvHeadsPerGPU(l.TP) * m.HeadDim)
		attn = 2*h*q + 2*h*kv
	}
	p := attn + 2*h
	if !m.IsMoELayer(i) {
		p += mlpParams(m.HiddenSize, m.IntermediateSize, m.GatedMLP) / tp
	} else {
		p += h * int64(m.NumExperts) // router, replicated
		p += m.sharedExpertParams() / tp
		p += int64(m.NumExperts/l.EP) * m.expertParams() / int64(l.MoETP())
	}
	return p * int64(m.WeightBytes)
}

// WeightBytesPerGPU returns the weight bytes on the most loaded GPU of the
// layout: a stage's layers, plus the embedding (first stage) and LM head
// (last stage), vocabulary-split over TP.
func (m *Model) WeightBytesPerGPU(l Layout) int64 {
	l = l.Normalize()
	// Embeddings and LM head stay BF16 in quantized checkpoints.
	emb := int64(m.VocabSize) * int64(m.HiddenSize) / int64(l.TP) * 2
	var worst int64
	for s := 0; s < l.PP; s++ {
		first, end := l.StageLayers(m, s)
		var b int64
		for i := first; i < end; i++ {
			b += m.layerWeightBytesPerGPU(i, l)
		}
		if s == 0 {
			b += emb
		}
		if s == l.PP-1 && (!m.TiedEmbeddings || l.PP > 1) {
			b += emb
		}
		worst = max(worst, b)
	}
	return worst
}

// KVBytesPerTokenLayer is the KV-cache bytes one token takes in one layer on
// one GPU: K and V for the GPU's KV heads, or the compressed latent for MLA.
func (m *Model) KVBytesPerTokenLayer(tp int) int64 {
	if m.IsMLA() {
		return int64(m.KVLoraRank+m.QKRopeHeadDim) * int64(m.KVBytes)
	}
	return 2 * int64(m.kvHeadsPerGPU(max(tp, 1))*m.HeadDim) * int64(m.KVBytes)
}

// KVBytesPerToken is the KV-cache bytes one token takes on one GPU of the
// most loaded pipeline stage.
func (m *Model) KVBytesPerToken(l Layout) int64 {
	l = l.Normalize()
	first, end := l.StageLayers(m, 0)
	return int64(end-first) * m.KVBytesPerTokenLayer(l.TP)
}
