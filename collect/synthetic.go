package collect

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// Synthetic is the built-in device model as a backend (docs/design.md section 6):
// every time comes from roofline.Roofline for the named device (the host
// family from roofline.HostOpMs, the simulator's default host model), with
// seeded multiplicative
// log-normal noise per repetition. The noise of a request depends only on
// the seed and the request ID, so any order, shard or resume of a sweep
// gives the same numbers.
//
// MoE runtime contract (cold standalone gating, uniform_topk routing):
// roofline.Roofline.ContextTimeMs, the same pricing simulate's fallback uses.
type Synthetic struct {
	roof roofline.Roofline
	seed uint64
}

// Noise and cold-start constants of the synthetic backend.
const (
	eventNoise  = 0.03 // sigma of log-normal noise on CUDA_EVENT timings
	kernelNoise = 0.01 // on KERNEL_ONLY timings
	hostNoise   = 0.05 // on host timings
)

// NewSynthetic returns the synthetic backend for dev.
func NewSynthetic(dev *spec.Device, seed uint64) *Synthetic {
	return &Synthetic{roof: roofline.Roofline{Device: roofline.NewDevice(dev)}, seed: seed}
}

// Measure returns the modelled timing of req.
func (s *Synthetic) Measure(ctx context.Context, req *Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	base := s.baseMs(req)
	sigma := eventNoise
	switch req.measurement {
	case spec.KernelOnly:
		sigma = kernelNoise
	case spec.HostWall:
		sigma = hostNoise
	}
	rng := rand.New(rand.NewPCG(s.seed, requestHash(req.ID)))
	samples := make([]float64, max(req.Repeats, 1))
	for i := range samples {
		samples[i] = base * math.Exp(sigma*rng.NormFloat64())
	}
	impl := "synthetic_roofline"
	if req.op.Family == spec.FamilyCPU {
		impl = "synthetic_host_model"
	}
	return &Response{ID: req.ID, OK: true, Stats: summarize(samples), Impl: impl, KernelSource: spec.KernelSourceRoofline, Device: s.roof.Device.Name, DType: "bfloat16"}, nil
}

// Close does nothing: the model holds no resources.
func (s *Synthetic) Close() error { return nil }

// baseMs is the noise-free time of req under its measurement type.
func (s *Synthetic) baseMs(req *Request) float64 {
	o := req.op
	sh := req.Shape
	if ms, ok := roofline.IssueOpMs(&s.roof.Device.Device, o.Name); ok {
		return ms
	}
	if o.Family == spec.FamilyCPU {
		return roofline.HostOpMs(&s.roof.Device.Device, o.Name, sh.TP, sh.BatchSize, sh.PrefillTokens, sh.DecodeTokens, sh.Vocab)
	}
	return s.roof.ContextTimeMs(o, req.features, req.measurement, sh.GatingContext, sh.RoutingPath)
}

func requestHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
