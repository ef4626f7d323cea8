package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// A per-tensor W8A8 FP8 linear layer as vLLM's CUTLASS scaled_mm runs it
// (KernelCutlassFP8, the kernel Kernels.FP8Linear names for vLLM 0.24 on
// Hopper and Blackwell). vLLM picks one CUTLASS 3.x configuration per
// bucket of token rows M (csrc/quantization/w8a8/cutlass/c3x/
// scaled_mm_sm90_fp8_dispatch.cuh at vllm-project/vllm 68f442eb, and
// scaled_mm_sm100_fp8_dispatch.cuh at 487e7b0e; read, not copied):
//
//   - Hopper (sm90): M <= 16 and M in (16, 64] with N <= 1,280 swap the
//     operands (the weights take the tile's 64-row side) and tile 16
//     tokens x 64 outputs x 256 of K; M in (16, 64] with N > 1,280 tiles
//     64 x 64 x 256 (swapped); M in (64, 128] 64 x 128 x 128; larger M
//     128 x 128 x 128 (2 x 1 clusters). A persistent tile scheduler, no
//     split of K.
//   - Blackwell (sm100): M <= 16 swaps to 32 tokens x 128 outputs x 128;
//     M in (16, 64] 64 x 128 x 256 swapped, except M = 64 with K < 4,096
//     (64 x 64 x 128); M in (64, 256] 128 x 128 x 128; larger M 256 x 128
//     x 128 over 2 x 2 clusters (a 256-row tile on two SMs).
//
// The model prices a layer of M tokens as:
//
//   - its tiles (the bucket's, output padded to whole tiles) in whole
//     waves over the SMs, each tile the slower of its MMA (tile rows x
//     columns x K at MMAEff of one SM's share of the dense FP8 peak) and
//     its K loop (IterUs a 128-byte step of K, the whole K: CUTLASS's
//     kernel does not split it); a per-tile operand-stream limit, as the
//     cuBLAS model has (cublas.go), does not change the fit, so there is
//     none;
//   - no faster than the HBM roof: FP8 weights and activations and the
//     BF16 output at MemEff of the HBM bandwidth (weights still in the L2
//     from the collector's replay read at L2Gain times that rate,
//     Roofline.RepeatedBlockBytes; a served layer's come from HBM);
//   - plus FloorUs, a GEMM's launch floor in a CUDA-graph replay, taken
//     from the device's cuBLAS terms (cublas.go), not fitted: the rows
//     time the GEMM with the collector's quantization, whose own floor
//     (fp8quant.go) takes the rest.
//
// The terms are fitted jointly with the 0.24.0 collector's dynamic
// quantization (fp8quant.go) on AIConfigurator's vLLM 0.24.0 fp8 gemm
// rows with every fifth row held out, per device (cost/cutlassfp8_test.go,
// TestCutlassFP8Refit): H100 SXM fitted 8.7% MAPE, held out 8.7%; B200
// SXM fitted 14.9%, held out 14.7% (Hopper's terms there: 16.7%).
type CutlassFP8 struct {
	FloorUs, IterUs, MMAEff, MemEff, L2Gain float64
}

// cutlassFP8Tile is one CUTLASS configuration's tile: Rows token rows,
// Cols output columns, KBytes of K a main-loop stage, on SMs SMs.
type cutlassFP8Tile struct{ Rows, Cols, KBytes, SMs float64 }

// cutlassFP8TileFor returns the tile vLLM's dispatch picks on a device of
// architecture arch for M tokens, N outputs and K.
func cutlassFP8TileFor(arch string, m, n, k float64) cutlassFP8Tile {
	if arch == spec.ArchBlackwell {
		switch {
		case m <= 16:
			return cutlassFP8Tile{32, 128, 128, 1}
		case m <= 64 && m == 64 && k < 4096:
			return cutlassFP8Tile{64, 64, 128, 1}
		case m <= 64:
			return cutlassFP8Tile{64, 128, 256, 1}
		case m <= 256:
			return cutlassFP8Tile{128, 128, 128, 1}
		default:
			return cutlassFP8Tile{256, 128, 128, 2}
		}
	}
	switch {
	case m <= 16, m <= 64 && n <= 1280:
		return cutlassFP8Tile{16, 64, 256, 1}
	case m <= 64:
		return cutlassFP8Tile{64, 64, 256, 1}
	case m <= 128:
		return cutlassFP8Tile{64, 128, 128, 1}
	default:
		return cutlassFP8Tile{128, 128, 128, 1}
	}
}

// cutlassFP8Terms are the fitted terms per architecture: Hopper's on
// AIConfigurator's vLLM 0.24.0 H100 SXM fp8 rows, Blackwell's on its B200
// SXM rows (the B200's record names no L2 size, so no row is priced warm
// and it has no L2Gain), every fifth row held out (cost/cutlassfp8_test.go).
var cutlassFP8Terms = map[string]CutlassFP8{
	spec.ArchHopper:    {FloorUs: hopperCuBLAS.FloorUs, IterUs: 0.08997, MMAEff: 0.6826, MemEff: 0.7507, L2Gain: 1.243},
	spec.ArchBlackwell: {FloorUs: blackwellCuBLAS.FloorUs, IterUs: 0.08208, MMAEff: 0.8503, MemEff: 0.6621},
}

// CutlassFP8Of returns the terms of devices of architecture arch.
func CutlassFP8Of(arch string) (CutlassFP8, bool) {
	c, ok := cutlassFP8Terms[arch]
	return c, ok
}

// cutlassFP8GEMM returns the terms pricing op o when it is a per-tensor
// FP8 linear layer run by CUTLASS's scaled_mm (Kernels.FP8Linear).
func (r Roofline) cutlassFP8GEMM(o *spec.Op) (CutlassFP8, bool) {
	if !o.FP8 || o.FP8Block || o.N <= 0 || o.K <= 0 || ClassOf(o.Name) != ClassGEMM || r.Device.SMs <= 0 || r.Device.PeakFP8TFLOPS <= 0 {
		return CutlassFP8{}, false
	}
	if FP8LinearKernel(r.Kernels.FP8Linear, r.Device.Arch, false, 0, o.N, o.K) != KernelCutlassFP8 {
		return CutlassFP8{}, false
	}
	return CutlassFP8Of(r.Device.Arch)
}

// CutlassFP8Us is the time of FP8 GEMM o over m token rows with terms c,
// in microseconds.
func (r Roofline) CutlassFP8Us(c CutlassFP8, o *spec.Op, m float64) float64 {
	d := r.Device
	m = math.Max(m, 1)
	n, k := float64(o.N), float64(o.K)
	t := cutlassFP8TileFor(d.Arch, m, n, k)
	sms := float64(d.SMs)
	smFLOPsPerUs := d.PeakTFLOPS(true) * 1e6 / sms * d.ScaledRoof(c.MMAEff)
	rows := t.Rows / t.SMs
	mma := rows * t.Cols * k * 2 / smFLOPsPerUs
	loop := math.Ceil(k/t.KBytes) * t.KBytes / gemmTileKBytes * c.IterUs
	tiles := math.Ceil(m/t.Rows) * math.Ceil(n/t.Cols) * t.SMs
	body := math.Ceil(tiles/sms) * math.Max(mma, loop)
	weights := n * k
	if r.weightsInL2(o) && c.L2Gain > 0 {
		weights /= c.L2Gain
	}
	hbm := (weights + m*k + m*n*2) / (d.HBMGBps * 1e3 * c.MemEff)
	return c.FloorUs + math.Max(body, hbm)
}
