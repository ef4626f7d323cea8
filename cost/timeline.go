package cost

// The two timelines of a forward pass (docs/design.md section 2). The host issues
// the step's ops in order, each costing its issue time on the CPU; the GPU
// runs an op once it is issued and the op before it has finished. A run of
// ops is summarised by a span: its CPU time, its GPU time and when the GPU
// finishes it, counted from its first issue with the GPU idle. Spans
// compose in order, so a step is priced from per-layer sums computed once
// per run, never op by op:
//
//	(a then b).end = max(a.end + b.gpu, a.cpu + b.end)
//
// and n identical layers end at layer.end + (n-1) x max(layer.cpu, layer.gpu):
// after the first layer, whichever timeline is slower sets the pace.
type span struct {
	cpu, gpu, end float64
}

// opSpan is one op: issued in cpu, run for gpu.
func opSpan(cpu, gpu float64) span { return span{cpu, gpu, cpu + gpu} }

// then is a followed by b.
func (a span) then(b span) span {
	return span{a.cpu + b.cpu, a.gpu + b.gpu, max(a.end+b.gpu, a.cpu+b.end)}
}

// repeat is n copies of a in a row.
func (a span) repeat(n int) span {
	if n <= 0 {
		return span{}
	}
	f := float64(n)
	return span{f * a.cpu, f * a.gpu, a.end + (f-1)*max(a.cpu, a.gpu)}
}

// layerSpan approximates one layer of CPU time cpu and GPU time gpu spread
// over ops ops, whose first op costs firstCPU to issue. Within a layer the
// GPU finishes at max over ops j of (CPU up to j) + (GPU from j on); the
// first and last op bound it: a host-bound layer ends about one
// op's GPU time after its last issue, a GPU-bound one its GPU time after
// its first. The exact figure is within min(cpu, gpu) of it, an error paid
// once per step (the repeat term is exact), under 1/layers of the step.
func layerSpan(cpu, gpu, firstCPU float64, ops int) span {
	tail := gpu / float64(max(ops, 1))
	return span{cpu, gpu, max(cpu+tail, firstCPU+gpu)}
}

// forward is the span of one stage's forward pass: the prologue ops
// (embedding) issued, then layers identical layers, then the epilogue (LM
// head or the activation send).
type forward struct {
	prologueCPU  float64
	layer        span
	layers       int
	epilogueCPU  float64
	epilogueGPU  float64
	prologueGPU  float64
	layerFirstUs float64
}

func (f *forward) span() span {
	s := opSpan(f.prologueCPU, f.prologueGPU)
	s = s.then(f.layer.repeat(f.layers))
	return s.then(opSpan(f.epilogueCPU, f.epilogueGPU))
}
