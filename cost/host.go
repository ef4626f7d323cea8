package cost

import (
	"fmt"
	"strings"

	"github.com/ftk-dev/ftk/roofline"
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

// hostModel prices the host side of a step (docs/design.md section 2): scheduling
// and input preparation before the forward pass, sampling and output
// processing after it, and the inter-process hand-off of a multi-GPU
// executor. The times come from, in order of preference, the calibration's
// host_ms_per_step (one figure per step, all before the forward pass), the
// HOST_WALL predictors of a CPU-overhead profile, or roofline's default host
// model for the device class, the last two times the calibration's
// host_scale. They are never silently zero.
//
// On a pipeline, the first stage schedules and every stage prepares its
// inputs; the last stage samples and processes outputs; the hand-off is
// paid on every stage when the replica has more than one GPU.
type hostModel struct {
	source       string
	note         string
	calibratedMs float64
	// scale multiplies every modelled part (the calibration's host_scale;
	// 1 when not calibrated).
	scale       float64
	preds       [numHostOps]OpPredictor
	extrap      [numHostOps]extrapolationCounter
	extrapCount [numHostOps]int64
	keys        [numHostOps]spec.OpKey
	dev         *spec.Device
	tp, vocab   int
	multiGPU    bool
	// byDecodeSeqs caches decode-only steps (b sequences, b decode tokens).
	byDecodeSeqs [][numHostOps]float64
	scratch      [numHostOps]float64
	x            [3]float64
}

func newHostModel(c *OpCostConfig, l spec.Layout) (*hostModel, error) {
	h := &hostModel{dev: c.Device, tp: l.TP, vocab: c.Model.VocabSize, multiGPU: l.TP*l.PP > 1, scale: 1,
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
	case found == 0 && c.HostPredictors != nil && !hasIssueOps(c.HostPredictors):
		return nil, fmt.Errorf("simulate: the host bundle has no HOST_WALL predictor for TP=%d (want %s ...)", l.TP, h.keys[0])
	case found == 0:
		h.source, h.note = HostFromDefault, roofline.HostModelDescription(c.Device)
	default:
		h.source = HostFromProfile
		h.note = fmt.Sprintf("CPU-overhead profile: %d of %d host parts predicted (HOST_WALL, TP=%d); the rest from the %s", found, numHostOps, l.TP, roofline.HostModelDescription(c.Device))
	}
	if s := c.Calibration.HostScale; s > 0 {
		h.scale = s
		h.note += fmt.Sprintf("; calibrated: x%g (host_scale)", s)
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
			out[i] = h.scale * roofline.HostOpMs(h.dev, op, h.tp, seqs, prefillTokens, decodeTokens, h.vocab)
			continue
		}
		var before int64
		if h.extrap[i] != nil {
			before = h.extrap[i].Extrapolated()
		}
		out[i] = h.scale * max(0, p.PredictMs(h.x[:]))
		if h.extrap[i] != nil && h.extrap[i].Extrapolated() > before {
			h.extrapCount[i]++
		}
	}
}

// stage returns the host time before and after the forward pass on stage
// s of pp for a step, and of them the engine core's parts (see
// StepCost.CoreBeforeMs): the scheduling and the hand-off before, the
// output processing after. vLLM's executor broadcasts the scheduler output
// to every stage's workers at once (v1/executor/multiproc_executor.py,
// rpc_broadcast_mq), so each stage pays the hand-off as it receives it.
func (h *hostModel) stage(s, pp int, b *BatchShape) (before, after, coreBefore, coreAfter float64) {
	if h.source == HostFromCalibration {
		if s == 0 {
			return h.calibratedMs, 0, 0, 0
		}
		return 0, 0, 0, 0
	}
	decode := b.DecodeTokens()
	p := h.parts(b.Seqs, b.Tokens-decode, decode)
	before, coreBefore = p[hostPrepare]+p[hostHandoff], p[hostHandoff]
	if s == 0 {
		before += p[hostSchedule]
		coreBefore += p[hostSchedule]
	}
	if s == pp-1 {
		after, coreAfter = p[hostSampler]+p[hostProcess], p[hostProcess]
	}
	return before, after, coreBefore, coreAfter
}

// issueCosts resolves the per-kind issue costs of the CPU timeline: from a
// CPU-overhead profile's issue ops where it has them (HOST_WALL: measured
// with the GPU queue busy; CPU: the Python and dispatcher part measured on
// a CPU, to which the device's catalogued kernel launch is added), roofline's
// defaults for the device class otherwise; then the calibration's host
// speed and per-kind scales.
func issueCosts(c *OpCostConfig, l spec.Layout) (spec.IssueCosts, string) {
	costs := roofline.DefaultIssueCosts(c.Device)
	note := costs.Source
	x := []float64{1, 0, 1}
	var measured []string
	for _, op := range spec.IssueOps() {
		if op == spec.OpIssueLayer {
			continue // a plain-torch layer: reported by collect, not a cost term
		}
		for _, meas := range []string{spec.HostWall, spec.CPUTime} {
			p := hostPredictor(c, spec.OpKey{Op: op, Measurement: meas, TP: l.TP})
			if p == nil {
				continue
			}
			us := max(0, p.PredictMs(x)) * 1e3
			kernel := true
			switch op {
			case spec.OpIssueCall:
				costs.CallUs, kernel = us, false
			case spec.OpIssueModule:
				costs.ModuleUs, kernel = us, false
			case spec.OpIssueGraph:
				costs.GraphLaunchUs, costs.PieceLaunchUs = us, us
			default:
				for _, k := range spec.KernelKinds() {
					if spec.IssueOpOfKind(k) == op {
						if meas == spec.CPUTime {
							us += c.Device.LaunchUs
						}
						costs.KernelUs[k] = us
					}
				}
			}
			label := op
			if meas == spec.CPUTime && kernel {
				label += " (CPU-measured + launch)"
			}
			measured = append(measured, label)
			break
		}
	}
	if len(measured) > 0 {
		note = fmt.Sprintf("CPU-overhead profile: %s measured; the rest from the %s", strings.Join(measured, ", "), costs.Source)
	}
	c.Calibration.ApplyIssue(&costs)
	if c.Calibration.HostSpeed > 0 || len(c.Calibration.IssueScale) > 0 {
		note += fmt.Sprintf("; calibrated (host_speed %g, issue_scale %v)", c.Calibration.HostSpeed, c.Calibration.IssueScale)
	}
	return costs, note
}

// hostPredictor finds key k in the host predictors, then the bundle.
func hostPredictor(c *OpCostConfig, k spec.OpKey) OpPredictor {
	for _, set := range []PredictorSet{c.HostPredictors, c.Predictors} {
		if set == nil {
			continue
		}
		if p, ok := set.Predictor(k); ok {
			return p
		}
	}
	return nil
}

// hasIssueOps reports whether set predicts any host issue cost.
func hasIssueOps(set PredictorSet) bool {
	for _, k := range set.Keys() {
		for _, op := range spec.IssueOps() {
			if k.Op == op {
				return true
			}
		}
	}
	return false
}
