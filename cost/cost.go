package cost

// Component is one part of an engine step's time on one pipeline stage.
// Device components run on the GPU and add up; the launch and host
// components are CPU time (docs/design.md section 2). The forward pass runs on two
// timelines: the host issues ops (launch: the CPU issue time of the
// forward, module and dispatcher Python included), the GPU runs each once
// issued and the one before it done; ForwardMs is when the GPU finishes:
//
//	step = host_before + forward + host_after,  forward >= max(device, launch)
type Component uint8

// The components of a step.
const (
	CompLinear     Component = iota // linear_op family: GEMMs, norms, activations, embedding, LM head
	CompAttention                   // attention family
	CompMoE                         // moe family: gating, routing, shuffling, grouped GEMM
	CompTPComm                      // TP all-reduce
	CompEPComm                      // EP dispatch and combine
	CompPPComm                      // activation send to the next pipeline stage
	CompLaunch                      // host time issuing the forward pass (Python, dispatcher, kernel launches)
	CompHostBefore                  // host work before the forward pass (scheduling, input preparation)
	CompHostAfter                   // host work after it (sampling, output processing)
	NumComponents
)

// NumDeviceComponents counts the device components, which come first.
const NumDeviceComponents = int(CompLaunch)

var componentNames = [NumComponents]string{"linear", "attention", "moe", "tp_comm", "ep_comm", "pp_comm", "launch", "host_before", "host_after"}

func (c Component) String() string { return componentNames[c] }

// StepCost is the time of one step on one stage, by component.
type StepCost struct {
	Ms [NumComponents]float64
	// ForwardMs is when the GPU finishes the forward pass, counted from its
	// first issue: the end of the two timelines. Zero means the cost model
	// has no timeline and the forward is max(device, launch).
	ForwardMs float64
	// Kernels is the number of GPU kernels the step runs.
	Kernels int
	// Graph is set when the step replays CUDA graphs (full or piecewise).
	Graph bool
	// CoreBeforeMs is the part of host_before spent before the stage's
	// worker process holds the batch: the engine core's scheduling (stage
	// 0) and the hand-off of the scheduler output to the workers.
	// CoreAfterMs is the part of host_after the engine core spends after
	// the last stage's worker is done: applying the sampled tokens. vLLM
	// runs them in the engine core process, beside the workers' own
	// timelines (simulate's pipeline engine keeps them off the stages).
	CoreBeforeMs, CoreAfterMs float64
}

// DeviceMs is the GPU time: the sum of the device components.
func (c *StepCost) DeviceMs() float64 {
	var d float64
	for _, ms := range c.Ms[:NumDeviceComponents] {
		d += ms
	}
	return d
}

// GPUMs is the forward pass: the end of the CPU and GPU timelines, never
// shorter than the device time or the host issue time.
func (c *StepCost) GPUMs() float64 {
	return max(c.ForwardMs, c.DeviceMs(), c.Ms[CompLaunch])
}

// TotalMs is the step's wall time: host_before + forward + host_after.
func (c *StepCost) TotalMs() float64 {
	return c.Ms[CompHostBefore] + c.GPUMs() + c.Ms[CompHostAfter]
}

// WallMs is the step's wall time when its host work may overlap the
// forward pass before it (async scheduling, docs/design.md section 2). With
// overlap (the stage ran a step right up to this one), scheduling and
// input preparation of this step ran during the previous forward pass and
// output processing runs during the next, so host time shows only where
// the host, which also issues the forward, is the slower timeline:
// max(forward, host_before + launch + host_after). After an idle stage
// nothing hides host_before: host_before + max(forward, host_after).
// Without overlap it is TotalMs.
func (c *StepCost) WallMs(async, overlap bool) float64 {
	g, hb, ha := c.GPUMs(), c.Ms[CompHostBefore], c.Ms[CompHostAfter]
	switch {
	case !async:
		return hb + g + ha
	case overlap:
		return max(g, hb+c.Ms[CompLaunch]+ha)
	}
	return hb + max(g, ha)
}

// Attribute splits the step's wall time (WallMs) over the components:
// device components at their time, launch at what the forward adds beyond
// the device time (the host issuing slower than the GPU runs), host parts
// at what the forward pass does not hide. The parts add up to WallMs.
func (c *StepCost) Attribute(async, overlap bool, out *[NumComponents]float64) {
	copy(out[:NumDeviceComponents], c.Ms[:NumDeviceComponents])
	d := c.DeviceMs()
	g, hb, ha := c.GPUMs(), c.Ms[CompHostBefore], c.Ms[CompHostAfter]
	out[CompLaunch] = g - d
	switch {
	case !async:
		out[CompHostBefore], out[CompHostAfter] = hb, ha
	case overlap:
		if w := c.WallMs(async, overlap); w > g && hb+ha > 0 {
			out[CompHostBefore], out[CompHostAfter] = (w-g)*hb/(hb+ha), (w-g)*ha/(hb+ha)
		} else {
			out[CompHostBefore], out[CompHostAfter] = 0, 0
		}
	default:
		out[CompHostBefore], out[CompHostAfter] = hb, max(0, ha-g)
	}
}

// BatchShape is what a cost model sees of one step's batch. The engine
// reuses its slices from step to step.
type BatchShape struct {
	// Tokens is the number of new tokens of the step (prefill and decode).
	Tokens int
	// Seqs is the number of scheduled sequences; each computes logits.
	Seqs int
	// PrefillChunks and PrefillContexts are, per prefilling sequence, the
	// new prompt tokens and the tokens already cached before them.
	PrefillChunks, PrefillContexts []int
	// DecodeContexts is, per decoding sequence, the tokens already cached
	// before the tokens it decodes.
	DecodeContexts []int
	// DecodeQueries is, per decoding sequence, the query tokens it runs
	// this step: empty when every decoding sequence runs one (a plain
	// decode), else k+1 for the verify pass of speculative decoding with k
	// draft tokens. Tokens counts them all. A sequence of several query
	// tokens attends as a chunk of them on its cached context (vLLM runs
	// it through the varlen attention path: attentionSplit).
	DecodeQueries []int
	// Logits is the rows the LM head computes when it is not one per
	// sequence (0): a verify pass computes logits at every query token
	// (vLLM's rejection sampler takes the target's distribution at each
	// draft position and the bonus one).
	Logits int
}

// Reset empties the shape, keeping its slices' memory.
func (b *BatchShape) Reset() {
	b.Tokens, b.Seqs, b.Logits = 0, 0, 0
	b.PrefillChunks = b.PrefillChunks[:0]
	b.PrefillContexts = b.PrefillContexts[:0]
	b.DecodeContexts = b.DecodeContexts[:0]
	b.DecodeQueries = b.DecodeQueries[:0]
}

// DecodeTokens is the tokens the decoding sequences run: one each, or
// their DecodeQueries.
func (b *BatchShape) DecodeTokens() int {
	if len(b.DecodeQueries) == 0 {
		return len(b.DecodeContexts)
	}
	n := 0
	for _, q := range b.DecodeQueries {
		n += q
	}
	return n
}

// attentionSplit is the batch as attention runs it: the prefill chunks
// with the multi-token decodes as chunks of their query tokens on their
// contexts, and the one-token decodes' contexts. Without multi-token
// decodes it is the shape's own slices; otherwise it fills s's.
func (b *BatchShape) attentionSplit(s *BatchShape) (chunks, contexts, decodes []int) {
	if len(b.DecodeQueries) == 0 {
		return b.PrefillChunks, b.PrefillContexts, b.DecodeContexts
	}
	s.PrefillChunks = append(s.PrefillChunks[:0], b.PrefillChunks...)
	s.PrefillContexts = append(s.PrefillContexts[:0], b.PrefillContexts...)
	s.DecodeContexts = s.DecodeContexts[:0]
	for i, k := range b.DecodeContexts {
		if q := b.DecodeQueries[i]; q > 1 {
			s.PrefillChunks = append(s.PrefillChunks, q)
			s.PrefillContexts = append(s.PrefillContexts, k)
		} else {
			s.DecodeContexts = append(s.DecodeContexts, k)
		}
	}
	return s.PrefillChunks, s.PrefillContexts, s.DecodeContexts
}
