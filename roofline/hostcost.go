package roofline

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// The default host model: the CPU time of one engine step's host-side
// parts (the cpu_overhead operators of spec/host.go), in milliseconds, for a
// step of b sequences with p prefill and d decode tokens. It is what the
// simulator uses when no CPU-overhead profile is given, and the figures
// collect's synthetic backend writes, so a synthetic profile fitted and
// simulated gives the same host time as no profile at all.
//
// The terms are a fixed Python cost per step plus costs per sequence and
// per token, of the order vLLM V1 shows on current servers: a scheduler pass
// over the running requests, building the input tensors, sampling over the
// vocabulary (which also streams the FP32 logits through HBM) and turning
// sampled tokens into outputs. At 32 sequences they add up to about 0.5 ms a
// step and at 256 sequences to about 3 ms, the "few milliseconds per step"
// that vLLM's V1 announcement (blog.vllm.ai, January 2025) names as the
// CPU overhead that matters once a Llama-8B forward pass on an H100 takes
// about 5 ms. Kernel launches are not part of it: the simulator adds them
// separately (docs/design.md section 2).
//
// The device record's host_cpu_factor scales every term: the host CPUs of
// the device's systems against the reference host (spec.Device.HostCPUFactor).

// HostOpMs returns the default model's time of host op (OpCPUSchedule,
// OpCPUPrepareInputs, OpCPUSampler, OpCPUProcessOutputs or OpCPURayComm)
// for one step of b sequences with p prefill and d decode tokens, on a
// replica of tensor-parallel degree tp serving a vocabulary of vocab
// tokens. The inter-process hand-off (OpCPURayComm) is zero at tp 1.
func HostOpMs(dev *spec.Device, op string, tp, b, p, d, vocab int) float64 {
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
	return ms * dev.HostCPUFactor
}

// HostModelDescription states the default host model's figures for device
// d, for run summaries.
func HostModelDescription(d *spec.Device) string {
	return fmt.Sprintf("default host model (%s class, CPU factor %.1f): schedule 0.04 ms + 1.5 us/seq, prepare inputs 0.06 ms + 2.5 us/seq + 0.06 us/token, "+
		"sampler 0.08 ms + 1 us/seq + logits over HBM, process outputs 0.03 ms + 4 us/seq, hand-off (TP>1) 0.05 ms + 0.02 ms x log2(TP)",
		d.Name, d.HostCPUFactor)
}
