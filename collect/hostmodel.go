package collect

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// The synthetic host model: the CPU time of one engine step's host-side
// parts, in milliseconds, for a batch of b sequences with p prefill and d
// decode tokens. The terms are a fixed Python cost per step plus costs per
// sequence and per token, of the order vLLM V1 shows on current servers
// (a scheduler pass over the running requests, building input tensors,
// sampling over the vocabulary, detokenizing outputs); the sampler also
// streams the logits through HBM. It is a model, labelled synthetic like
// every synthetic row, to be replaced by a profile of the real engine.
//
// Device class sets the host CPU speed: Hopper systems (h100, h200, h800)
// ship with current server CPUs (factor 1.0); Ampere systems (a100, a800)
// with a generation older ones (factor 1.3, slower).

// hostCPUFactor is the host slowdown of a device class.
func hostCPUFactor(dev *spec.Device) float64 {
	switch dev.Name {
	case "a100", "a800":
		return 1.3
	}
	return 1.0
}

// hostMs returns the modelled time of host op for one step.
func hostMs(dev *spec.Device, op string, tp, b, p, d, vocab int) float64 {
	fb, fp, fd := float64(b), float64(p), float64(d)
	var ms float64
	switch op {
	case spec.OpCPUSchedule:
		ms = 0.04 + 0.0015*fb + 4e-6*fp
	case spec.OpCPUPrepareInputs:
		ms = 0.06 + 0.0025*fb + 6e-5*(fp+fd)
	case spec.OpCPUSampler:
		logitBytes := 12 * fb * float64(vocab) // read, softmax, write float32 logits
		ms = 0.08 + 0.001*fb + logitBytes/(dev.HBMGBps*1e9*0.85)*1e3
	case spec.OpCPUProcessOutputs:
		ms = 0.03 + 0.004*fb
	case spec.OpCPURayComm:
		if tp <= 1 {
			return 0
		}
		ms = 0.05 + 0.02*math.Log2(float64(tp)) + 0.0002*fb
	}
	return ms * hostCPUFactor(dev)
}
