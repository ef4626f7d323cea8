package cost

import (
	"fmt"

	"github.com/ftk-dev/ftk/spec"
)

// Host time sources (CostModelReport.HostSource).
const (
	HostFromCalibration = "calibration"
	HostFromProfile     = "profile"
	HostFromDefault     = "default"
)

// hostOps are the host-side parts of a step, in hostModel order.
var hostOps = [...]string{spec.OpCPUSchedule, spec.OpCPUPrepareInputs, spec.OpCPUSampler, spec.OpCPUProcessOutputs, spec.OpCPURayComm}

const (
	hostSchedule = iota
	hostPrepare
	hostSampler
	hostProcess
	hostHandoff
	numHostOps
)

// hostModel prices the host side of a step (DESIGN section 2): scheduling
// and input preparation before the forward pass, sampling and output
// processing after it, and the inter-process hand-off of a multi-GPU
// executor. The times come from, in order of preference, the calibration's
// host_ms_per_step (one figure per step, all before the forward pass), the
// HOST_WALL predictors of a CPU-overhead profile, or spec's default host
// model for the device class. They are never silently zero.
//
// On a pipeline, the first stage schedules and every stage prepares its
// inputs; the last stage samples and processes outputs; the hand-off is
// paid on every stage when the replica has more than one GPU.
type hostModel struct {
	source       string
	note         string
	calibratedMs float64
	preds        [numHostOps]OpPredictor
	extrap       [numHostOps]extrapolationCounter
	extrapCount  [numHostOps]int64
	keys         [numHostOps]spec.OpKey
	dev          *spec.Device
	tp, vocab    int
	multiGPU     bool
	// byDecodeSeqs caches decode-only steps (b sequences, b decode tokens).
	byDecodeSeqs [][numHostOps]float64
	scratch      [numHostOps]float64
	x            [3]float64
}

func newHostModel(c *OpCostConfig, l spec.Layout) (*hostModel, error) {
	h := &hostModel{dev: c.Device, tp: l.TP, vocab: c.Model.VocabSize, multiGPU: l.TP*l.PP > 1,
		byDecodeSeqs: make([][numHostOps]float64, c.Limits.MaxNumSeqs+1)}
	for i := range h.byDecodeSeqs {
		h.byDecodeSeqs[i][0] = -1
	}
	if c.Calibration.HostMsPerStep > 0 {
		h.source, h.calibratedMs = HostFromCalibration, c.Calibration.HostMsPerStep
		h.note = fmt.Sprintf("calibrated: %g ms per step (host_ms_per_step), before the forward pass", h.calibratedMs)
		return h, nil
	}
	found := 0
	for i, op := range hostOps {
		k := spec.OpKey{Op: op, Measurement: spec.HostWall, TP: l.TP}
		h.keys[i] = k
		for _, set := range []PredictorSet{c.HostPredictors, c.Predictors} {
			if set == nil {
				continue
			}
			if p, ok := set.Predictor(k); ok {
				h.preds[i] = p
				h.extrap[i], _ = p.(extrapolationCounter)
				found++
				break
			}
		}
	}
	switch {
	case found == 0 && c.HostPredictors != nil:
		return nil, fmt.Errorf("simulate: the host bundle has no HOST_WALL predictor for TP=%d (want %s ...)", l.TP, h.keys[0])
	case found == 0:
		h.source, h.note = HostFromDefault, spec.HostModelDescription(c.Device)
	default:
		h.source = HostFromProfile
		h.note = fmt.Sprintf("CPU-overhead profile: %d of %d host parts predicted (HOST_WALL, TP=%d); the rest from the %s", found, numHostOps, l.TP, spec.HostModelDescription(c.Device))
	}
	return h, nil
}

// parts returns the time of every host part for a step.
func (h *hostModel) parts(seqs, prefillTokens, decodeTokens int) *[numHostOps]float64 {
	if prefillTokens == 0 && decodeTokens == seqs && seqs < len(h.byDecodeSeqs) {
		e := &h.byDecodeSeqs[seqs]
		if e[0] < 0 {
			h.compute(seqs, 0, seqs, e)
		}
		return e
	}
	h.compute(seqs, prefillTokens, decodeTokens, &h.scratch)
	return &h.scratch
}

func (h *hostModel) compute(seqs, prefillTokens, decodeTokens int, out *[numHostOps]float64) {
	h.x = [3]float64{float64(seqs), float64(prefillTokens), float64(decodeTokens)}
	for i, op := range hostOps {
		if i == hostHandoff && !h.multiGPU {
			out[i] = 0
			continue
		}
		p := h.preds[i]
		if p == nil {
			out[i] = spec.HostOpMs(h.dev, op, h.tp, seqs, prefillTokens, decodeTokens, h.vocab)
			continue
		}
		var before int64
		if h.extrap[i] != nil {
			before = h.extrap[i].Extrapolated()
		}
		out[i] = max(0, p.PredictMs(h.x[:]))
		if h.extrap[i] != nil && h.extrap[i].Extrapolated() > before {
			h.extrapCount[i]++
		}
	}
}

// stage returns the host time before and after the forward pass on stage
// s of pp for a step.
func (h *hostModel) stage(s, pp int, b *BatchShape) (before, after float64) {
	if h.source == HostFromCalibration {
		if s == 0 {
			return h.calibratedMs, 0
		}
		return 0, 0
	}
	decode := len(b.DecodeContexts)
	p := h.parts(b.Seqs, b.Tokens-decode, decode)
	before = p[hostPrepare] + p[hostHandoff]
	if s == 0 {
		before += p[hostSchedule]
	}
	if s == pp-1 {
		after = p[hostSampler] + p[hostProcess]
	}
	return before, after
}
