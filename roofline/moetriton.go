package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// vLLM's fused-MoE layer on Hopper, as its Triton path runs it
// (fused_experts_impl, vllm/model_executor/layers/fused_moe/fused_moe.py):
// moe_align_block_size sorts the token-expert pairs by expert and pads each
// expert's rows to whole BLOCK_SIZE_M tiles; fused_moe_kernel runs the
// gate/up GEMM ([pairs, hidden] x [hidden, 2 x width]), SiLU-and-mul
// halves it, fused_moe_kernel runs the down GEMM ([pairs, width] x
// [width, hidden]) and moe_sum adds each token's top-k rows. For FP8
// weights the activations are quantized before each GEMM (static
// per-tensor scales, or per-token groups of 128 for block FP8:
// moe_kernel_quantize_input). Under expert parallelism the pairs routed to
// other ranks' experts stay in the sorted list: their tiles write zeros
// (write_zeros_to_output) and the activation and the sum run over every
// pair.
//
// Each GEMM launch is priced from what its grid of programs (one per
// BLOCK_SIZE_M x BLOCK_SIZE_N output tile) moves and computes:
//
//   - the HBM stream: the weights of every expert that has tokens, the
//     output rows, and the zero rows of other ranks' pairs;
//   - the operands through the L2: every tile loads its rows of A and its
//     expert's slice of B, so A is read once per column of tiles and B
//     once per row of tiles: small tiles re-read more (64 x 64 loads 2.7
//     times the bytes per multiply-add of 128 x 256);
//   - the padded MMA at the tiles' rate;
//   - a per-program cost (a grid of hundreds of thousands of short
//     programs, as the down GEMM of a 32-way tensor-parallel split has);
//
// combined as a p-norm (Norm): the terms overlap, not fully. The tiles are
// vLLM's config for the layer (moeconfig.go): a tuned file of the era when
// one exists, else get_default_config's (BLOCK_SIZE_M/N/K 16/32/64 for no
// more tokens than local experts, 64/64/32 beyond, and 64 x 128 x 128
// for block FP8).
//
// The terms are fitted on AIConfigurator's vLLM 0.14.0 H100 SXM moe rows
// (testdata/aiconfigurator/h100_sxm/moe/vllm/0.14.0, balanced routing,
// each row one CUDA-graph replay of fused_experts on precomputed routing:
// collector/vllm/collect_moe.py at ai-dynamo/aiconfigurator 5ef50c9),
// one record per weight format, with every fifth row held out
// (cost.TestTritonMoERefit). The constants are effective ones: the fit
// trades the terms against each other (an HBM efficiency near 1 with an
// element-wise one of 0.4-0.9), so only their sum is checked.

// TritonMoE is one weight format's terms of the fused_experts model.
type TritonMoE struct {
	// FloorUs is the fixed time of the layer past its alignment (four to
	// six kernels in one graph).
	FloorUs float64
	// MemEff is the HBM efficiency of the GEMMs' own traffic; ZeroRows the
	// bytes of a zero row (another rank's pair) as a fraction of a real
	// output row's.
	MemEff, ZeroRows float64
	// EltwiseEff is the HBM efficiency of SiLU-and-mul and moe_sum.
	EltwiseEff float64
	// Norm is p of the p-norm that combines a launch's four terms.
	Norm float64
	// ProgramUs is the time of one program (output tile) per SM beyond
	// its loop.
	ProgramUs float64
	// Tiles are the rates of each config's tiles.
	Tiles [numMoETileConfigs]MoETileRate
	// QuantEff and QuantFloorUs price the FP8 activation quantizations
	// (bytes at QuantEff of HBM, two launches); zero for BF16.
	QuantEff, QuantFloorUs float64
}

// MoETileRate is what one tile config reaches: its operand loads through
// the L2 (GB/s per SM) and its padded MMA (a fraction of the dense peak of
// the weights' format).
type MoETileRate struct {
	OperandGBpsPerSM, MMAEff float64
}

// The tile configs fused_moe_kernel runs with (moeconfig.go).
const (
	MoETilesSmall = iota // get_default_config, tokens <= local experts: 16 x 32 x 64
	MoETilesLarge        // get_default_config beyond: 64 x 64 x 32
	MoETilesBlock        // get_default_config, block FP8: 64 x 128 x 128
	MoETilesTuned        // a tuned file
	numMoETileConfigs
)

// TritonMoESet is the fused_experts terms of a device, per weight format,
// and moe_align_block_size's: AlignFloorUs (the shuffle class's floor,
// fitted on Frontier's H800 profiles, curves.go) and AlignPairUs per
// token-expert pair (fitted with the BF16 record).
type TritonMoESet struct {
	AlignFloorUs, AlignPairUs float64
	BF16, FP8, FP8Block       TritonMoE
	// BF16From024 is the BF16 record of the vLLM 0.24.0 kernel era
	// (MoEKernels.BF16From024), fitted on that release's rows: the 0.24.0
	// collector (collect_moe.py at d5bad971c) builds the FusedMoE module,
	// whose Triton path the 0.14.0 record under-prices (bias -2.4%).
	BF16From024 TritonMoE
}

// hopperTritonMoE is fitted on the H100 SXM rows named above (go test
// ./cost -run TestTritonMoERefit -v): held out 8.1% (BF16, 3,969 rows),
// 7.6% (FP8 per-tensor, 3,969), 5.2% (block FP8, 3,078). BF16From024 is
// fitted on the vLLM 0.24.0 H100 BF16 Triton rows
// (testdata/aiconfigurator-0.24/h100_sxm, 5,400 balanced rows, every fifth
// held out; go test ./cost -run TestTritonMoE024Refit -v): fitted 9.38%,
// held out 9.4% (bias -3.0%); the alignment term stays the 0.14.0 fit's.
var hopperTritonMoE = TritonMoESet{AlignFloorUs: 4.03, AlignPairUs: 0.002391,
	BF16: TritonMoE{FloorUs: 25.96, MemEff: 0.9379, ZeroRows: 1.003, EltwiseEff: 0.7539, Norm: 1.276, ProgramUs: 0.1016,
		Tiles: [numMoETileConfigs]MoETileRate{
			MoETilesSmall: {OperandGBpsPerSM: 281.5, MMAEff: 1},
			MoETilesLarge: {OperandGBpsPerSM: 78.65, MMAEff: 0.6045},
			MoETilesTuned: {OperandGBpsPerSM: 3213, MMAEff: 0.8579},
		}},
	FP8: TritonMoE{FloorUs: 28.66, MemEff: 0.9100, ZeroRows: 0.7845, EltwiseEff: 0.9815, Norm: 2.082, ProgramUs: 0.2306,
		Tiles: [numMoETileConfigs]MoETileRate{
			MoETilesSmall: {OperandGBpsPerSM: 86.25, MMAEff: 0.07693},
			MoETilesLarge: {OperandGBpsPerSM: 40.45, MMAEff: 0.1873},
			MoETilesTuned: {OperandGBpsPerSM: 4272, MMAEff: 0.7721},
		}, QuantEff: 0.3420, QuantFloorUs: 0},
	FP8Block: TritonMoE{FloorUs: 18.72, MemEff: 0.9727, ZeroRows: 0.4969, EltwiseEff: 0.3982, Norm: 1.747, ProgramUs: 0.1982,
		Tiles: [numMoETileConfigs]MoETileRate{
			MoETilesBlock: {OperandGBpsPerSM: 67.47, MMAEff: 1},
			MoETilesTuned: {OperandGBpsPerSM: 50.03, MMAEff: 1},
		}, QuantEff: 1.062, QuantFloorUs: 8.376},
	BF16From024: TritonMoE{FloorUs: 21.91, MemEff: 0.9413, ZeroRows: 0.05288, EltwiseEff: 0.5263, Norm: 1.562, ProgramUs: 0.2996,
		Tiles: [numMoETileConfigs]MoETileRate{
			MoETilesSmall: {OperandGBpsPerSM: 693.9, MMAEff: 1},
			MoETilesLarge: {OperandGBpsPerSM: 29.53, MMAEff: 1},
			MoETilesTuned: {OperandGBpsPerSM: 165.9, MMAEff: 1},
		}},
}

// For returns the terms of grouped GEMM o's weight format in the kernel
// era k names.
func (s *TritonMoESet) For(o *spec.Op, k MoEKernels) *TritonMoE {
	switch {
	case o.FP8 && o.FP8Block:
		return &s.FP8Block
	case o.FP8:
		return &s.FP8
	case k.BF16From024 && s.BF16From024.Norm > 0:
		return &s.BF16From024
	}
	return &s.BF16
}

// moeLayerShape is what the Triton model reads of a fused-MoE layer at
// features x: tokens T (the batch on every rank), pairs routed to this
// rank's experts P, experts with tokens A, top-k, the global and local
// experts, hidden size H and expert width N on the rank.
type moeLayerShape struct {
	T, P, A       float64
	topK, E, L    float64
	H, N          float64
	gates         float64 // projections before the activation: 2 (gate, up), 1 non-gated
	weightBytes   float64
	fp8, fp8Block bool
}

// moeShape reads grouped GEMM o at features x.
func moeShape(o *spec.Op, x []float64) moeLayerShape {
	s := moeLayerShape{T: batchTokens(o, x), P: x[0], A: o.ActiveExperts(x), topK: float64(max(o.TopK, 1)), gates: 2,
		L: float64(max(o.LocalExperts, 1)), H: float64(o.K), N: float64(o.ExpertWidth),
		weightBytes: float64(o.ElemBytes), fp8: o.FP8, fp8Block: o.FP8 && o.FP8Block}
	s.E = math.Max(float64(o.Experts), s.L)
	if o.NonGatedExperts {
		s.gates = 1
	}
	return s
}

// tiles returns the config class and BLOCK_SIZE_M and BLOCK_SIZE_N of the
// layer's launches: a tuned file when tuned, with BLOCK_SIZE_M following
// the rows per expert (tuned files pick 16 for decode and grow it with the
// batch) and BLOCK_SIZE_N 128 (a stated approximation: ftk does not record
// the files' tiles); else get_default_config's, the batch-scaled one of
// vLLM v0.17.0 on when scaled.
func (s moeLayerShape) tiles(tuned, scaled bool) (cfg int, bm, bn float64) {
	switch {
	case tuned:
		m := s.P / math.Max(s.A, 1)
		bm = 128
		switch {
		case m <= 16:
			bm = 16
		case m <= 48:
			bm = 32
		case m <= 96:
			bm = 64
		}
		return MoETilesTuned, bm, 128
	case s.fp8Block:
		return MoETilesBlock, 64, 128
	case scaled:
		// vLLM PR #34846's default (v0.17.0 on): BLOCK_SIZE_M 16, 32, 64
		// and 128 up to 32, 96 and 512 tokens and beyond, BLOCK_SIZE_N
		// 128 beyond 64 tokens (64 below: a guess), within 0-5% of tuned
		// configs on an H200 (vLLM PR #44818): priced as tuned tiles.
		bm, bn = 128, 128
		switch {
		case s.T <= 32:
			bm = 16
		case s.T <= 96:
			bm = 32
		case s.T <= 512:
			bm = 64
		}
		if s.T <= 64 {
			bn = 64
		}
		return MoETilesTuned, bm, bn
	case s.T <= s.L:
		return MoETilesSmall, 16, 32
	}
	return MoETilesLarge, 64, 64
}

// gemmUs is the GPU time of the grouped GEMM op of shape s under terms m
// on device d, in microseconds: both GEMM launches, the activation, the
// sum and, for FP8, the activation quantizations; the alignment is the
// moe_shuffling op's (alignUs). tuned says vLLM of the era has a tuned
// config for the layer, scaled that its default config is the batch-scaled
// one.
func (m *TritonMoE) gemmUs(s moeLayerShape, tuned, scaled bool, d *Device) float64 {
	if s.P <= 0 {
		return 0
	}
	cfg, bm, bn := s.tiles(tuned, scaled)
	rate := m.Tiles[cfg]
	peak := d.PeakTFLOPS(s.fp8) * 1e6 // FLOPs per us
	hbm := d.HBMGBps * 1e3            // bytes per us
	sms := float64(max(d.SMs, 1))
	// Rows: each active expert's rows padded to whole tiles; other ranks'
	// pairs over the remaining experts, also in whole tiles.
	mTiles := s.A * math.Ceil(s.P/s.A/bm)
	zero := math.Max(s.T*s.topK-s.P, 0)
	zTiles := 0.0
	if others := math.Min(s.E-s.L, zero); others > 0 {
		zTiles = others * math.Ceil(zero/others/bm)
	}
	launch := func(n, k float64) float64 {
		nTiles := math.Ceil(n / bn)
		hbmUs := (s.A*n*k*s.weightBytes + s.P*n*2 + zero*n*2*m.ZeroRows) / (hbm * m.MemEff)
		operandUs := (s.P*k*s.weightBytes*nTiles + mTiles*k*n*s.weightBytes) / (rate.OperandGBpsPerSM * 1e3 * sms)
		mmaUs := 2 * mTiles * bm * n * k / (rate.MMAEff * peak)
		progUs := (mTiles + zTiles) * nTiles / sms * m.ProgramUs
		p := m.Norm
		return math.Pow(math.Pow(hbmUs, p)+math.Pow(operandUs, p)+math.Pow(mmaUs, p)+math.Pow(progUs, p), 1/p)
	}
	us := m.FloorUs + launch(s.gates*s.N, s.H) + launch(s.H, s.N)
	// SiLU-and-mul over every pair's [2 x width] row (the activation over
	// [width] when non-gated), and moe_sum of the top-k rows of every token
	// (BF16 caches).
	pairs := s.T * s.topK
	us += (pairs*s.N*2*(s.gates+1) + pairs*s.H*2 + s.T*s.H*2) / (hbm * m.EltwiseEff)
	if s.fp8 && m.QuantEff > 0 {
		// The hidden states and the activation's output quantized to FP8:
		// read two bytes, write one, per element.
		us += (s.T*s.H*3+pairs*s.N*3)/(hbm*m.QuantEff) + 2*m.QuantFloorUs
	}
	return us
}

// alignUs is moe_align_block_size's time for tokens tokens of topK
// choices (the moe_shuffling op).
func (s *TritonMoESet) alignUs(tokens, topK float64) float64 {
	return s.AlignFloorUs + tokens*topK*s.AlignPairUs
}

// moeKernel is the experts kernel Roofline.Kernels names for grouped GEMM
// (or alignment) op o's layer; "" when none is named.
func (r Roofline) moeKernel(o *spec.Op) string {
	k := r.Kernels.MoE
	switch {
	case o.FP8 && o.FP8Block && o.LocalExperts > 0 && o.Experts > o.LocalExperts:
		return k.FP8BlockEP
	case o.FP8 && o.FP8Block:
		return k.FP8Block
	case o.FP8 && o.FP8StaticScales:
		return k.FP8
	case o.FP8:
		return k.FP8Dynamic
	}
	return k.BF16
}

// tritonMoE returns the fused_experts terms MoE op o (the alignment or
// the grouped GEMM) is priced with: the device's, when it has them
// (Hopper) and Roofline.Kernels names the Triton kernel for o's layer;
// nil otherwise: CUTLASS MoE, other kernels, other devices, and no kernel
// named (no vLLM version given), which the MoE classes' curves price
// (fitted on Frontier's H800 profiles and the public kernel times of
// moegemm.go and moeconfig.go).
func (r Roofline) tritonMoE(o *spec.Op) *TritonMoESet {
	s := r.Device.Curves.TritonMoE
	if s == nil || o.CutlassMoE || r.moeKernel(o) != MoEKernelTriton {
		return nil
	}
	return s
}

// tritonMoEUs prices MoE op o at features x with terms s, in
// microseconds; ok is false for other ops.
func (r Roofline) tritonMoEUs(s *TritonMoESet, o *spec.Op, x []float64) (us float64, ok bool) {
	if len(x) == 0 {
		return 0, false
	}
	switch o.Name {
	case spec.OpMoEShuffling:
		if x[0] <= 0 {
			return 0, true
		}
		return s.alignUs(x[0], float64(max(o.TopK, 1))), true
	case spec.OpMoEGroupedGEMM:
		dtype, block := "", 0
		if o.FP8 {
			dtype = "fp8_w8a8"
			if o.FP8Block {
				block = 128
			}
		}
		k := r.Kernels.MoE
		before := k.ConfigsBefore
		if before == "" {
			before = vllmEraFilesBefore
		}
		_, tuned := r.Device.tunedMoEConfigBefore(o.LocalExperts, o.ExpertWidth, dtype, block, before)
		return s.For(o, k).gemmUs(moeShape(o, x), tuned, k.ScaledDefault, r.Device), true
	}
	return 0, false
}
