package roofline

import "github.com/ftk-dev/ftk/spec"

// A device's dense peak is the rate its tensor cores reach at the clock
// the datasheet assumes; what a GEMM gets is the clock the card holds
// under load. The GEMM roofs (Curve.ComputeEff) are fitted on profiles of
// power-limited SXM parts (H800 and H100 for Hopper, A800 for Ampere),
// which hold well under their boost clock, so one roof as a fraction of
// the peak over-prices cards that do not throttle (an H20, whose tensor
// cores are cut and whose power is not, or a GeForce card that boosts past
// its rated clock) and under-prices ones that throttle more (an L40S).
//
// Device.MatmulBF16TFLOPS is a public measurement of the device's best
// dense BF16 matmul rate (spec/matmulrates.go). A roof fitted as a
// fraction of the peak applies to the device times the ratio of its
// measured fraction of the peak to the fraction measured, in the same data
// set, on the device its generation's roofs were fitted on (ClockScale),
// capped at the peak (ScaledRoof); a device with no row keeps the fitted
// roofs (scale 1). Only the compute rate is scaled: floors, K-loop and
// tile latencies keep their fitted values (a stated approximation; a card
// that boosts higher runs those faster too: lssprofile_test.go).

// matmulReference is the device each generation's roofs were fitted on.
func matmulReference(arch string) string {
	if arch == spec.ArchAmpere {
		return "a800"
	}
	return "h100"
}

// ClockScale is the device's measured dense BF16 matmul rate as a
// fraction of its peak over the same fraction on its generation's
// reference device: 1 where either has no measurement. LookupDevice
// computes it once (clockScaleOf); roofs are scaled on every kernel
// priced.
func (d *Device) ClockScale() float64 {
	if d.clockScale <= 0 {
		return 1
	}
	return d.clockScale
}

// clockScaleOf computes ClockScale for a catalog device.
func clockScaleOf(d *spec.Device) float64 {
	ref, err := spec.LookupDevice(matmulReference(d.Arch))
	if err != nil || d.MatmulBF16TFLOPS <= 0 || d.PeakBF16TFLOPS <= 0 || ref.MatmulBF16TFLOPS <= 0 || ref.PeakBF16TFLOPS <= 0 {
		return 1
	}
	return (d.MatmulBF16TFLOPS / d.PeakBF16TFLOPS) / (ref.MatmulBF16TFLOPS / ref.PeakBF16TFLOPS)
}

// ScaledRoof is a compute roof fitted on the generation's reference device
// (a fraction of the peak) as it applies to this device: times its
// ClockScale, but never above the peak, or above the measured matmul rate
// where a card measures more than its peak (a GeForce card boosting past
// its rated clock). The cap matters where a roof fitted on a throttling
// reference (the fused-MoE kernel's 0.91, moegemm.go) meets a card that
// does not throttle: at the scale alone an H20's fused-MoE layers would
// run at 1.10x its peak. Capped, a whole fused-MoE layer on the shapes
// of vLLM PR #44152's tuned H20 kernel times at 2,048-4,096 tokens (its
// gate/up and down GEMMs, three times the FLOPs of the PR's one gate/up
// launch, plus the activation and sum kernels) costs 2.93-3.05x the PR's
// launch; at the reference's roof it cost 3.21-3.29x.
func (d *Device) ScaledRoof(roof float64) float64 {
	s := d.ClockScale()
	if s == 1 {
		return roof
	}
	ceiling := 1.0
	if d.PeakBF16TFLOPS > 0 {
		ceiling = max(1, d.MatmulBF16TFLOPS/d.PeakBF16TFLOPS)
	}
	return min(roof*s, ceiling)
}
