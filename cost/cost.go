package cost

// Component is one part of an engine step's time on one pipeline stage.
// Device components run on the GPU and add up; the launch and host
// components are CPU time (DESIGN section 2):
//
//	step = host_before + max(device, launch) + host_after
type Component uint8

// The components of a step.
const (
	CompLinear     Component = iota // linear_op family: GEMMs, norms, activations, embedding, LM head
	CompAttention                   // attention family
	CompMoE                         // moe family: gating, routing, shuffling, grouped GEMM
	CompTPComm                      // TP all-reduce
	CompEPComm                      // EP dispatch and combine
	CompPPComm                      // activation send to the next pipeline stage
	CompLaunch                      // host time launching kernels
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
	// Kernels is the number of GPU kernels the step runs.
	Kernels int
	// Graph is set when the step replays CUDA graphs (full or piecewise).
	Graph bool
}

// DeviceMs is the GPU time: the sum of the device components.
func (c *StepCost) DeviceMs() float64 {
	var d float64
	for _, ms := range c.Ms[:NumDeviceComponents] {
		d += ms
	}
	return d
}

// GPUMs is the forward pass: the device time, or the launches when the
// host cannot issue kernels as fast as the GPU runs them.
func (c *StepCost) GPUMs() float64 { return max(c.DeviceMs(), c.Ms[CompLaunch]) }

// TotalMs is the step's wall time: host_before + max(device, launch) +
// host_after.
func (c *StepCost) TotalMs() float64 {
	return c.Ms[CompHostBefore] + c.GPUMs() + c.Ms[CompHostAfter]
}

// WallMs is the step's wall time when its host work may overlap the
// forward pass before it (async scheduling, DESIGN section 2). With
// overlap (the stage ran a step right up to this one), scheduling and
// input preparation of this step ran during the previous forward pass and
// output processing runs during the next, so host time shows only where
// it exceeds the forward pass: max(forward, host_before + host_after).
// After an idle stage nothing hides host_before: host_before +
// max(forward, host_after). Without overlap it is TotalMs.
func (c *StepCost) WallMs(async, overlap bool) float64 {
	g, hb, ha := c.GPUMs(), c.Ms[CompHostBefore], c.Ms[CompHostAfter]
	switch {
	case !async:
		return hb + g + ha
	case overlap:
		return max(g, hb+ha)
	}
	return hb + max(g, ha)
}

// Attribute splits the step's wall time (WallMs) over the components:
// device components at their time, launch at what it adds beyond the
// device time (host-bound steps), host parts at what the forward pass does
// not hide. The parts add up to WallMs.
func (c *StepCost) Attribute(async, overlap bool, out *[NumComponents]float64) {
	copy(out[:NumDeviceComponents], c.Ms[:NumDeviceComponents])
	d := c.DeviceMs()
	out[CompLaunch] = max(0, c.Ms[CompLaunch]-d)
	g, hb, ha := c.GPUMs(), c.Ms[CompHostBefore], c.Ms[CompHostAfter]
	switch {
	case !async:
		out[CompHostBefore], out[CompHostAfter] = hb, ha
	case overlap:
		if h := hb + ha; h > g {
			out[CompHostBefore], out[CompHostAfter] = (h-g)*hb/h, (h-g)*ha/h
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
	// before the token it decodes.
	DecodeContexts []int
}

func (b *BatchShape) Reset() {
	b.Tokens, b.Seqs = 0, 0
	b.PrefillChunks = b.PrefillChunks[:0]
	b.PrefillContexts = b.PrefillContexts[:0]
	b.DecodeContexts = b.DecodeContexts[:0]
}
