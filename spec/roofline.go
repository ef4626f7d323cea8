package spec

import "math"

// Measurement types: how an operator's time was taken (FORMATS.md). They
// must never be mixed in one predictor.
const (
	// CUDAEvent is wall time between CUDA events around an eager op: it
	// includes launch gaps.
	CUDAEvent = "CUDA_EVENT"
	// KernelOnly is the sum of GPU kernel durations: the family for
	// CUDA-graph replay.
	KernelOnly = "KERNEL_ONLY"
	// CPUTime is an op timed on the host CPU (the torch worker without a GPU).
	CPUTime = "CPU"
)

// Gating runtime contexts of MoE gating profiles.
const (
	GatingPrefillHot = "prefill_hot"
	GatingStandalone = "standalone_legacy"
)

// Roofline efficiencies of the built-in device model. Large BF16 GEMMs on
// Hopper reach about 70-75% of dense peak in cuBLAS; streaming kernels reach
// about 80-90% of HBM bandwidth; NCCL bus bandwidth is about 80% of NVLink.
const (
	gemmPeakEfficiency = 0.72
	memEfficiency      = 0.85
	linkEfficiency     = 0.80
	// flopsHalf is the FLOP count at which non-GEMM arithmetic (attention)
	// reaches half its peak efficiency: small kernels cannot fill the machine.
	flopsHalf = 1e9
	// collLatencyUs is the base latency of one collective hop.
	collLatencyUs = 6.0
)

// Roofline is the built-in device model (DESIGN section 6): the time of an
// operator from its FLOPs and bytes, with wave quantisation over SMs, an
// efficiency curve for small shapes, a kernel floor and, for CUDA_EVENT
// timings, the launch cost of eager execution.
type Roofline struct{ Device *Device }

// KernelMs returns the GPU time of op for features x, in milliseconds:
// what a KERNEL_ONLY measurement sees.
func (r Roofline) KernelMs(o *Op, x []float64) float64 {
	d := r.Device
	flops, bytes := o.Work(x)
	floor := float64(o.Kernels) * d.KernelFloorUs
	if o.Family == FamilyCollective {
		return (r.collectiveUs(o, bytes) + floor) / 1e3
	}
	if o.Name == OpCPUOverhead {
		return 0
	}
	computeUs := 0.0
	switch {
	case flops > 0 && o.N > 0:
		// GEMMs run in whole waves of output tiles over the SMs.
		eff := gemmPeakEfficiency * r.waveUtilisation(x[0], o.N, o.K)
		computeUs = flops / (d.PeakBF16TFLOPS * 1e12 * eff) * 1e6
	case flops > 0:
		// Other arithmetic (attention) fills the machine gradually.
		eff := gemmPeakEfficiency * flops / (flops + flopsHalf)
		computeUs = flops / (d.PeakBF16TFLOPS * 1e12 * eff) * 1e6
	}
	memUs := bytes / (d.HBMGBps * 1e9 * memEfficiency) * 1e6
	return (math.Max(computeUs, memUs) + floor) / 1e3
}

// EventMs returns what a CUDA_EVENT measurement of op in isolation sees:
// the kernels, or the host launching them when that is slower.
func (r Roofline) EventMs(o *Op, x []float64) float64 {
	k := r.KernelMs(o, x)
	launch := r.LaunchMs(o)
	return math.Max(k, launch) + r.Device.KernelFloorUs/1e3
}

// LaunchMs is the host time to launch op's kernels eagerly.
func (r Roofline) LaunchMs(o *Op) float64 {
	return float64(o.Kernels) * r.Device.LaunchUs / 1e3
}

// TimeMs returns the op's time under a measurement type.
func (r Roofline) TimeMs(o *Op, x []float64, measurement string) float64 {
	if measurement == KernelOnly {
		return r.KernelMs(o, x)
	}
	return r.EventMs(o, x)
}

// waveUtilisation is the fraction of SMs busy over the waves of a GEMM with
// 128x128 output tiles. When there are fewer tiles than SMs the K dimension
// is split (split-K, as cuBLAS does) into chunks of at least 256 to occupy
// more SMs.
func (r Roofline) waveUtilisation(tokens float64, n, k int) float64 {
	sms := float64(r.Device.SMs)
	tiles := math.Ceil(tokens/128) * math.Ceil(float64(n)/128)
	if tiles <= 0 {
		return 1
	}
	if tiles < sms {
		split := math.Max(1, math.Min(math.Floor(sms/tiles), math.Floor(float64(k)/256)))
		tiles *= split
	}
	waves := math.Ceil(tiles / sms)
	return tiles / (waves * sms)
}

// collectiveUs models NCCL over NVLink: ring all-reduce moves 2(n-1)/n of
// the buffer, all-to-all and gather/scatter (n-1)/n, send/recv all of it.
func (r Roofline) collectiveUs(o *Op, bytes float64) float64 {
	n := float64(max(o.Workers, 2))
	bw := r.Device.NVLinkGBps * 1e9 * linkEfficiency
	var factor, hops float64
	switch o.Name {
	case OpAllReduce:
		factor, hops = 2*(n-1)/n, 2
	case OpSendRecv:
		factor, hops = 1, 1
	default: // EP dispatch / combine
		factor, hops = (n-1)/n, 1
	}
	return hops*collLatencyUs + factor*bytes/bw*1e6
}
