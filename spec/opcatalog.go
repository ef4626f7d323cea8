package spec

import "math"

// LayerOps returns, in execution order, the operators layer i of model m runs
// on one GPU under layout l. Attention contributes both attn_prefill and
// attn_decode; a step runs whichever its batch needs. Collectives appear
// only when their group is larger than one GPU: the TP all-reduce after
// attention and after the MLP (or the experts at DP=1), or EP dispatch and
// combine around the experts of a data-parallel layout (MoEExchanges).
func LayerOps(m *Model, l Layout, i int) []Op {
	l = l.Normalize()
	h, tp, eb := m.HiddenSize, l.TP, m.WeightBytes
	ab := 2 // activations are BF16
	qh := m.NumHeads / tp
	kvh := m.kvHeadsPerGPU(tp)
	hd := m.HeadDim
	vd := hd
	if m.IsMLA() {
		hd = m.QKNopeHeadDim + m.QKRopeHeadDim
		vd = m.VHeadDim
		kvh = qh
	}
	lin := func(name string, k, n, kernels int) Op {
		return Op{Name: name, Family: OpFamily(name), Kernels: kernels, K: k, N: n, ElemBytes: eb, FP8: m.FP8Compute, FP8Block: m.FP8Compute && m.FP8Block}
	}
	elem := func(name string, width, kernels int) Op {
		return Op{Name: name, Family: OpFamily(name), Kernels: kernels, Width: width, ElemBytes: ab}
	}
	attn := func(name string, kernels int) Op {
		return Op{Name: name, Family: FamilyAttention, Kernels: kernels, QHeads: qh, KVHeads: kvh, HeadDim: hd, ElemBytes: m.KVBytes}
	}
	coll := func(name string, workers int) Op {
		o := Op{Name: name, Family: FamilyCollective, Kernels: 1, Width: h, Workers: workers, ElemBytes: ab}
		if name == OpEPDispatch || name == OpEPCombine {
			o.DPRanks = l.DP
		}
		return o
	}
	// Q/K norms (Qwen3) run between the QKV projection and the rotary
	// embedding; profiles (Frontier's) time them with the projection.
	qkvKernels := 1
	if m.QKNorm {
		qkvKernels = 3 // projection, q norm, k norm
	}
	qkv := lin(OpAttnPreProj, h, (qh+2*kvh)*hd, qkvKernels)
	if m.QKNorm {
		// The norms run per head (roofline/qknorm.go).
		qkv.QHeads, qkv.KVHeads, qkv.HeadDim = qh, kvh, hd
	}
	ops := []Op{
		elem(OpInputLayernorm, h, 1),
		qkv,
		elem(OpAttnRope, (qh+kvh)*hd, 1),
		// The reshapes are views: no kernel (their KERNEL_ONLY profiles
		// time 0 in the H800 files).
		attn(OpAttnInputReshape, 0),
		attn(OpAttnKVCacheSave, 1),
		attn(OpAttnPrefill, 1),
		attn(OpAttnDecode, 1),
		attn(OpAttnOutputReshape, 0),
		lin(OpAttnPostProj, qh*vd, h, 1),
	}
	if tp > 1 {
		ops = append(ops, coll(OpAllReduce, tp))
	}
	ops = append(ops, elem(OpPostAttnLayernorm, h, 1))
	if !m.IsMoELayer(i) {
		w := m.IntermediateSize / tp
		ops = append(ops,
			lin(OpMLPUpProj, h, 2*w, 1),
			elem(OpMLPAct, w, 1),
			lin(OpMLPDownProj, w, h, 1))
		if tp > 1 {
			ops = append(ops, coll(OpAllReduce, tp))
		}
		return ops
	}
	ops = append(ops,
		lin(OpMoEGatingLinear, h, m.NumExperts, 1),
		Op{Name: OpMoERoutingTopK, Family: FamilyMoE, Kernels: 3, Width: m.NumExperts, TopK: m.TopK, ElemBytes: 4})
	// Which communication the experts need depends on the layout as vLLM
	// decides it (MoEComm): with data parallelism the DP ranks' tokens are
	// dispatched to the EP ranks that hold their experts and combined
	// back; at DP=1 every TP rank already holds every token, runs its
	// local experts and the TP all-reduce sums their outputs.
	exchange := MoEExchanges(l)
	if exchange {
		ops = append(ops, coll(OpEPDispatch, l.TP*l.DP))
	}
	ew := m.MoEIntermediateSize / l.MoETP()
	ops = append(ops,
		Op{Name: OpMoEShuffling, Family: FamilyMoE, Kernels: alignKernels(l.EP), Width: h, TopK: m.TopK,
			LocalExperts: m.NumExperts / l.EP, Experts: m.NumExperts, ElemBytes: ab, FP8: m.FP8Compute, CutlassMoE: m.FP8CutlassMoE, FP8Block: m.FP8Compute && m.FP8Block,
			FP8StaticScales: m.FP8Compute && m.FP8StaticScales},
		Op{Name: OpMoEGroupedGEMM, Family: FamilyMoE, Kernels: 3, K: h, ExpertWidth: ew,
			LocalExperts: m.NumExperts / l.EP, Experts: m.NumExperts, TopK: m.TopK, ElemBytes: eb, FP8: m.FP8Compute, CutlassMoE: m.FP8CutlassMoE, FP8Block: m.FP8Compute && m.FP8Block,
			FP8StaticScales: m.FP8Compute && m.FP8StaticScales})
	if m.SharedExperts > 0 {
		sw := m.SharedExpertIntermediateSize
		if sw == 0 {
			sw = m.MoEIntermediateSize
		}
		sw = sw * m.SharedExperts / tp
		ops = append(ops,
			lin(OpSharedUpProj, h, 2*sw, 1),
			elem(OpSharedAct, sw, 1),
			lin(OpSharedDownProj, sw, h, 1))
	}
	switch {
	case exchange:
		ops = append(ops, coll(OpEPCombine, l.TP*l.DP))
	case tp > 1:
		ops = append(ops, coll(OpAllReduce, tp))
	}
	return ops
}

// ModelOps returns the operators outside the layers: the embedding on the
// first pipeline stage, the LM head on the last, and the activation send
// between stages.
func ModelOps(m *Model, l Layout) (first, last []Op, between *Op) {
	l = l.Normalize()
	first = []Op{{Name: OpEmb, Family: FamilyLinear, Kernels: 1, Width: m.HiddenSize, ElemBytes: 2}}
	last = []Op{
		// The LM head stays BF16 in quantized checkpoints.
		{Name: OpLMHead, Family: FamilyLinear, Kernels: 2, K: m.HiddenSize, N: m.VocabSize / l.TP, ElemBytes: 2},
	}
	if l.PP > 1 {
		between = &Op{Name: OpSendRecv, Family: FamilyCollective, Kernels: 1, Width: m.HiddenSize, Workers: 2, ElemBytes: 2}
	}
	return first, last, between
}

// ActiveExpertsFeature is the index of an optional feature of the grouped
// GEMM after its OpFeatures: the local experts that received tokens. Fitted
// predictors never see it; Work uses it for the weight bytes streamed.
const ActiveExpertsFeature = 2

// Work returns the floating-point operations and the bytes moved to and from
// device memory by op for the features x (in OpFeatures order). It is the
// physics the roofline model and the extrapolation fallback share.
func (o *Op) Work(x []float64) (flops, bytes float64) {
	eb := float64(o.ElemBytes)
	switch o.Name {
	case OpAttnPrefill:
		ctx, c := x[0], x[1]
		qd, kd := float64(o.QHeads*o.HeadDim), float64(o.KVHeads*o.HeadDim)
		// QK^T and PV over cached context plus the causal half of the chunk.
		flops = 4 * qd * c * (ctx + c/2)
		bytes = eb * (2*c*qd + 2*(ctx+c)*kd)
		return flops, bytes
	case OpAttnDecode:
		b, ctx := x[0], x[1]
		qd, kd := float64(o.QHeads*o.HeadDim), float64(o.KVHeads*o.HeadDim)
		return 4 * qd * b * ctx, eb * (2*b*qd + 2*b*ctx*kd)
	case OpAttnInputReshape, OpAttnKVCacheSave, OpAttnOutputReshape:
		t := x[0]
		return 0, 2 * eb * t * float64((o.QHeads+2*o.KVHeads)*o.HeadDim)
	case OpMoERoutingTopK:
		t := x[0]
		return 4 * t * float64(o.Width), 4 * t * float64(o.Width+2*o.TopK)
	case OpMoEShuffling:
		// moe_align_block_size reads the int32 expert id of every
		// token-expert pair and writes its sorted index (roofline/moealign.go):
		// no hidden states move.
		return 0, 8 * x[0] * float64(o.TopK)
	case OpMoEGroupedGEMM:
		// The kernel streams the weights of every expert that has tokens.
		// Profiles assign tokens round-robin (min(experts, r) experts
		// touched); a routing draw knows how many it touched and passes
		// that as x[2] (ActiveExpertsFeature).
		r := x[0]
		k, w := float64(o.K), float64(o.ExpertWidth)
		active := 0.0
		if r > 0 {
			active = o.ActiveExperts(x)
		}
		flops = 6 * r * k * w
		bytes = eb*active*3*k*w + 2*4*r*k
		return flops, bytes
	case OpAllReduce, OpSendRecv, OpEPDispatch, OpEPCombine:
		return 0, x[0]
	case OpEmb:
		return 0, 2 * eb * x[0] * float64(o.Width)
	case OpAdd:
		// The residual add out of place (residual + hidden_states): it
		// reads both operands and writes the sum.
		return x[0] * float64(o.Width), 3 * eb * x[0] * float64(o.Width)
	case OpMLPAct, OpSharedAct:
		// SiLU-and-mul reads the gate and up halves and writes one.
		return 4 * x[0] * float64(o.Width), 3 * eb * x[0] * float64(o.Width)
	case OpCPUOverhead:
		return 0, 0
	}
	t := x[0]
	if o.N > 0 {
		k, n := float64(o.K), float64(o.N)
		return 2 * t * k * n, eb * (t*k + k*n + t*n)
	}
	return 4 * t * float64(o.Width), 2 * eb * t * float64(o.Width)
}

// ActiveExperts is the local experts that receive tokens for features x
// (Work's count: round-robin profiles touch min(experts, routed); a
// routing draw passes its count as x[ActiveExpertsFeature]).
func (o *Op) ActiveExperts(x []float64) float64 {
	active := min(float64(o.LocalExperts), x[0])
	if len(x) > ActiveExpertsFeature && x[ActiveExpertsFeature] > 0 {
		active = min(active, x[ActiveExpertsFeature])
	}
	return math.Max(active, 1)
}

// alignKernels is the kernels moe_align_block_size launches for a batch
// within the small-batch path: one, plus the expert map's index under
// expert parallelism (the kernels are described in roofline/moealign.go).
func alignKernels(ep int) int {
	if ep > 1 {
		return 2
	}
	return 1
}

// LayerFLOPs returns the FLOPs one GPU spends in layer i for a prefill of
// tokens new tokens with no cached context, with experts loaded evenly
// (tokens x top-k routed tokens spread over EP ranks). Collectives do no
// arithmetic.
func LayerFLOPs(m *Model, l Layout, i, tokens int) float64 {
	l = l.Normalize()
	t := float64(tokens)
	var total float64
	for _, o := range LayerOps(m, l, i) {
		var x []float64
		switch o.Name {
		case OpAttnDecode:
			continue
		case OpAttnPrefill:
			x = []float64{0, t}
		case OpMoEGroupedGEMM:
			r := t * float64(m.TopK) / float64(l.EP)
			x = []float64{r, math.Ceil(r / float64(o.LocalExperts))}
		default:
			x = []float64{t}
		}
		f, _ := o.Work(x)
		total += f
	}
	return total
}
