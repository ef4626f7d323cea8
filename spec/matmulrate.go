package spec

// A device's dense peak is the rate its tensor cores reach at the clock
// the datasheet assumes; what a GEMM gets is the clock the card holds
// under load. The GEMM roofs (Curve.ComputeEff) are fitted on profiles of
// power-limited SXM parts (H800 and H100 for Hopper, A800 for Ampere),
// which hold well under their boost clock, so one roof as a fraction of
// the peak over-prices cards that do not throttle (an H20, whose tensor
// cores are cut and whose power is not, or a GeForce card that boosts past
// its rated clock) and under-prices ones that throttle more (an L40S).
//
// MatmulBF16TFLOPS records, per catalog device, the best dense BF16
// torch.mm rate measured on square matrices of 1,024-10,240 (six warm-up
// and thirty timed calls each, the best size kept) in one public data set:
// zzc0721/torch-performance-test-data, database.md (read 2026-12-04; rows
// contributed 2025-2026, PyTorch 2.8.0 unless noted). A roof fitted as a
// fraction of the peak applies to the device times the ratio of its
// measured fraction of the peak to the fraction measured, in the same data
// set, on the device its generation's roofs were fitted on (ClockScale),
// capped at the peak (ScaledRoof); a device with no row keeps the fitted
// roofs (scale 1). Only the compute rate is scaled: floors, K-loop and
// tile latencies keep their fitted values (a stated approximation; a card
// that boosts higher runs those faster too: spec/lssprofile_test.go).
var matmulBF16TFLOPS = map[string]float64{
	// "NVIDIA H100 80GB HBM3": 789.24 (Docker, PyTorch 2.8.0, CUDA 12.6)
	// and 783.66 (bare metal): their mean. The reference of the
	// Hopper-fitted roofs (Hopper, and Ada and Blackwell, which borrow
	// them: curves.go).
	"h100": (789.24 + 783.66) / 2,
	"h200": 790.29, // "NVIDIA H200", Docker
	"h20":  141.86, // "NVIDIA H20 96GB", Docker, PyTorch 2.8.0, CUDA 12.8
	// "NVIDIA A800 SXM4 80GB", Docker, PyTorch 2.8.0: the reference of
	// the Ampere roofs (fitted on Frontier's A800 profiles).
	"a800": 266.48,
	"a100": 264.53, // "NVIDIA A100 SXM4 80GB", Docker, PyTorch 2.8.0
	"l40s": 269.15, // "NVIDIA L40S", Docker
	// "NVIDIA GeForce RTX 4090D 24GB", a cloud instance, PyTorch 2.8.0
	// (two 48 GB rows of the same chip: 151.09, 145.77).
	"rtx4090d": 148.91,
	// "NVIDIA GeForce RTX 4090 24GB", the same cloud and PyTorch 2.8.0 as
	// the 4090 D's row (other 24 GB rows: 170.06, 173.31 on bare metal
	// with PyTorch 2.4, 162.39 in Docker).
	"rtx4090": 163.09,
	// "NVIDIA RTX PRO 6000 Blackwell Server Edition", Docker (the same
	// card's issues #161-162, PyTorch 2.7.0: 417.34 at 8,192).
	"rtxpro6000": 409.42,
	"b200":       1696.03, // "NVIDIA B200 180GB", GCP a4-highgpu-8g, PyTorch 2.8.0
}

// matmulReference is the device each generation's roofs were fitted on.
func matmulReference(arch string) string {
	if arch == ArchAmpere {
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
func clockScaleOf(d *Device) float64 {
	ref, ok := deviceCatalog[matmulReference(d.Arch)]
	refRate := matmulBF16TFLOPS[matmulReference(d.Arch)]
	if !ok || d.MatmulBF16TFLOPS <= 0 || d.PeakBF16TFLOPS <= 0 || refRate <= 0 || ref.PeakBF16TFLOPS <= 0 {
		return 1
	}
	return (d.MatmulBF16TFLOPS / d.PeakBF16TFLOPS) / (refRate / ref.PeakBF16TFLOPS)
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
