package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// A BF16 linear layer as cuBLAS runs it. vLLM's unquantized linear layers
// call torch.nn.functional.linear (UnquantizedLinearMethod.apply in
// vllm/model_executor/layers/linear.py, through
// vllm/model_executor/layers/utils.py's dispatch_unquantized_gemm), which
// PyTorch hands to cuBLAS (cublasLt on Hopper and Blackwell). cuBLAS picks
// one of its kernels per shape by a heuristic that is not public; its
// kernels tile the output, run the tiles in waves over the SMs and, when
// the tiles are too few to fill the SMs, split K over more thread blocks
// and reduce the partial sums. The model prices every candidate and takes
// the fastest, as a heuristic tuned to pick the fastest kernel would:
//
//   - a candidate is an output tile (cuBLASTiles) and a split of K into s
//     parts (at least cuBLASMinSplitK of K each, at most two waves of
//     thread blocks in all);
//   - each thread block runs tile rows x columns x K/s multiply-adds at
//     MMAEff of one SM's share of the dense peak, streams its operands
//     (the tile's real rows, at most M, and its columns over its K/s) at
//     no more than CTAGBps, and walks its K/s in steps of 128 bytes of
//     each operand row, IterUs a step (the main loop's latency chain,
//     skinnygemm.go); its time is the slowest of the three (plus WaveUs,
//     Ampere's), and the blocks run in whole waves over the SMs;
//   - the whole is no faster than the HBM roof: weights, activations and
//     output (and, split, each part's FP32 partial output written and read
//     back) at MemEff of the HBM bandwidth;
//   - a split adds SplitKUs (the reduction), and every GEMM FloorUs.
//
// Hopper's terms are fitted on AIConfigurator's vLLM 0.14.0 H100 SXM BF16 gemm rows (9,240
// shapes, M 1-8,192, N and K 32-65,536) with every fifth row held out
// (cost/cublas_test.go, TestCuBLASGEMMRefit): fitted 7.2% MAPE, held out
// 6.9%, and the 35,742 rows of vLLM 0.24.0 (a later PyTorch and cuBLAS),
// all held out, 7.9%; the GEMM class's curve prices the same rows 16.3%
// and 16.7%. Each row is one GEMM of a CUDA graph of six
// RowParallelLinear layers with their own weights, replayed back to back
// (AIConfigurator collector/vllm/collect_gemm.py, latency / 6), as a
// served step under CUDA graphs runs its GEMMs, except that six layers
// of at most half the L2 stay there between replays: the scorer says so
// (Roofline.RepeatedBlockBytes) and such weights are read at L2Gain times
// the HBM roof's rate (fitted: 1.96); a served layer's weights come from
// HBM.
//
// The model prices a linear layer when the vLLM version is given
// (Kernels.BF16GEMM, KernelsFor); without one, the GEMM class's curve,
// fitted on the profiles of older stacks (Vidur's H100, whose compute-bound
// GEMMs reach 0.77 of the peak where these rows reach 0.85, and
// Frontier's H800), prices it.
type CuBLAS struct {
	// FloorUs is a GEMM's fixed time in a CUDA-graph replay.
	FloorUs float64
	// IterUs is one K step (128 bytes of each operand row) of a thread
	// block's main loop.
	IterUs float64
	// MMAEff is the fraction of one SM's share of the dense peak a thread
	// block's tile reaches.
	MMAEff float64
	// MemEff is the fraction of the HBM bandwidth the whole GEMM reaches.
	MemEff float64
	// CTAGBps is the most one thread block streams its operands at.
	CTAGBps float64
	// SplitKUs is the time a split-K GEMM adds for its reduction.
	SplitKUs float64
	// L2Gain is how many times the HBM roof's rate a GEMM reads weights
	// still in the L2 at (Roofline.RepeatedBlockBytes, warml2.go).
	L2Gain float64
	// WaveUs is what each wave of thread blocks adds beside its main
	// loop: the pipeline's fill before the first MMA and the tile's
	// epilogue after the last (0: none, folded into the floor).
	WaveUs float64
}

// cuBLASTiles are the output tiles (token rows x output columns) the
// model lets cuBLAS pick from: 128 x 128, 128 x 256 and 256 x 128, the
// tile shapes of CUTLASS's SM90 GEMM configurations, and for few tokens
// 8, 16, 32 or 64 rows by 128 columns: a Hopper warpgroup's MMA
// (wgmma.m64nNk16) takes 64 rows of one operand and N of 8 to 256 of the
// other in steps of 8 (PTX ISA, "Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate"), so a kernel that puts the weights on the 64-row
// side runs a few tokens without padding them to 64. A stated
// approximation of cuBLAS's own, unpublished, kernel list: without the
// narrow tiles the rows of 1-64 tokens at K = 4,096 are priced 10 us
// (64 padded rows at the fitted MMA rate) where they take 6.
var cuBLASTiles = []GEMMTile{{8, 128}, {16, 128}, {32, 128}, {64, 128}, {128, 128}, {128, 256}, {256, 128}}

// cuBLASMinSplitK is the least K a split part runs: the rows of 1-128
// tokens and 32-256 columns take 5.9-6.6 us at every K from 4,096 to
// 16,384 (parts of 1,024 at K = 16,384), after a K loop that grows to
// 6.3 us at K = 3,584; parts of 256 or 512 fit the table worse (7.8% and
// 7.8% against 7.7% MAPE) and price Frontier's H800 router GEMM (16
// columns, K 4,096: 6.0-6.8 us) 15% fast.
const cuBLASMinSplitK = 1024

// cuBLASMaxSplitK is the most parts K is split into.
const cuBLASMaxSplitK = 16

// cuBLASGEMM reports whether GEMM o is priced by the cuBLAS model: a dense
// BF16 (or FP16) linear op run as torch.nn.functional.linear
// (Kernels.BF16GEMM) on a device whose curves have the terms.
func (r Roofline) cuBLASGEMM(o *spec.Op) bool {
	return r.Kernels.BF16GEMM == KernelFLinear && r.Device.Curves.CuBLAS != nil && !o.FP8 && o.N > 0 && o.K > 0 && ClassOf(o.Name) == ClassGEMM && r.Device.SMs > 0
}

// cuBLASUs is the time of GEMM o over m token rows, in microseconds.
func (r Roofline) cuBLASUs(o *spec.Op, m float64) float64 {
	c := r.Device.Curves.CuBLAS
	d := r.Device
	m = math.Max(m, 1)
	n, k := float64(o.N), float64(o.K)
	eb := float64(max(o.ElemBytes, 1))
	sms := float64(d.SMs)
	smFLOPsPerUs := d.PeakTFLOPS(false) * 1e6 / sms * d.ScaledRoof(c.MMAEff)
	ctaBytesPerUs := c.CTAGBps * 1e3
	hbmBytesPerUs := d.HBMGBps * 1e3 * c.MemEff
	weights := n * k * eb
	if r.weightsInL2(o) && c.L2Gain > 0 {
		weights /= c.L2Gain
	}
	bytes := weights + (m*k+m*n)*eb
	best := math.Inf(1)
	for _, t := range cuBLASTiles {
		grid := math.Ceil(m/t.Rows) * math.Ceil(n/t.Cols)
		for s := 1.0; s <= cuBLASMaxSplitK; s++ {
			if s > 1 && (k/s < cuBLASMinSplitK || grid*s > 2*sms) {
				break
			}
			kPart := math.Ceil(k / s)
			mma := t.Rows * t.Cols * kPart * 2 / smFLOPsPerUs
			stream := (math.Min(t.Rows, m) + t.Cols) * kPart * eb / ctaBytesPerUs
			loop := math.Ceil(kPart*eb/gemmTileKBytes) * c.IterUs
			body := math.Ceil(grid*s/sms) * (math.Max(mma, math.Max(stream, loop)) + c.WaveUs)
			traffic := bytes
			if s > 1 {
				traffic += m * n * 4 * s * 2 // FP32 partials written and read back
			}
			us := math.Max(body, traffic/hbmBytesPerUs)
			if s > 1 {
				us += c.SplitKUs
			}
			best = math.Min(best, us)
		}
	}
	return c.FloorUs + best
}

// hopperCuBLAS is fitted on AIConfigurator's vLLM 0.14.0 H100 SXM BF16 gemm
// rows, every fifth held out (cost/cublas_test.go).
var hopperCuBLAS = CuBLAS{FloorUs: 2.683, IterUs: 0.07412, MMAEff: 0.846, MemEff: 0.8571, CTAGBps: 201.6, SplitKUs: 2.352, L2Gain: 1.955}

// ampereCuBLAS is fitted on AIConfigurator's vLLM 0.14.0 A100 SXM BF16
// gemm rows (9,240 shapes) with every fifth held out (cost/cublas_test.go),
// on the A100's SMs, dense peak (at its ClockScale) and HBM bandwidth from
// its device record: held out 12.4% MAPE (bias -2.2%), where Hopper's terms
// price the same rows at 22.4% (-21.2%) and the GEMM class's curve at 53.7%.
// Its thread blocks run mma.sync tiles, not a warpgroup's (the tile list is
// Hopper's, a stated approximation), and each wave of them adds 0.53 us
// (WaveUs: the rows of K 32-256 over many tiles take twice the floor, 10
// us at 384 x 5,120 x 128, where Hopper's terms give 5). The L2 gain is not
// fitted (the fit puts it below 1, which no cache does): every row reads
// its weights at the HBM roof's rate. The A100 is a check without a target
// in issue 31: these terms are fitted on four rows in five of its own
// table.
var ampereCuBLAS = CuBLAS{FloorUs: 3.492, IterUs: 0.1215, MMAEff: 0.8107, MemEff: 0.6747, CTAGBps: 384.9, SplitKUs: 1.165, WaveUs: 0.5322}

// blackwellCuBLAS is fitted the same way on AIConfigurator's vLLM 0.24.0
// B200 SXM BF16 gemm rows (35,742 shapes), every fifth held out
// (cost/cublas_test.go), on the B200's own SM count, dense peak (at its
// ClockScale, matmulrate.go) and HBM bandwidth from its device record:
// Hopper's terms there price the rows at 13.6% MAPE, these at 9.2% (held
// out 9.2%). The B200's record names no L2 size, so no row is priced warm
// (L2Gain unused).
var blackwellCuBLAS = CuBLAS{FloorUs: 2.062, IterUs: 0.06221, MMAEff: 0.783, MemEff: 0.7321, CTAGBps: 249.1, SplitKUs: 2.653}

// blackwellCuBLASCapability is the compute capability of the Blackwell
// parts blackwellCuBLAS prices (B200, tcgen05 MMA); the workstation parts
// (12.0, RTX PRO 6000) keep the GEMM class's curve.
const blackwellCuBLASCapability = "10.0"
