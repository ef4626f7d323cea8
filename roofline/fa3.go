package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// FA3 prices attention as vLLM runs it on Hopper (sm_90): its
// FLASH_ATTN backend calls FlashAttention-3 (vllm-flash-attn) for prefill
// and decode alike. The terms are read from, and fitted on, NVIDIA
// AIConfigurator's vLLM 0.14.0 H100 SXM tables (context_attention_perf
// and generation_attention_perf, kernel source vllm_flash_attn, head
// dim 128, BF16 and FP8 KV caches) and, for vLLM 0.24.0 (ByKernel), its
// 0.24.0 tables (vllm_flash_attn_fa3, head dims 64-256): each row is one
// CUDA-graph replay of
// one layer's FlashAttentionImpl.forward, which runs the KV-cache write
// (reshape_and_cache_flash) and the attention kernel
// (ai-dynamo/aiconfigurator collector/vllm/collect_attn.py at 5ef50c9 and
// d5bad971c: benchmark_with_power, repeat_n 1, 6 replays). The KV-cache
// write is the simulator's own attn_kv_cache_save op, priced beside
// (kvcachesave.go: one thread block a token, bound by the blocks the SMs
// hold, so a row's time grows with its KV heads where the attention's
// work does not); the terms here are the attention kernel's. TestFA3AttentionRefit
// (cost/fa3_test.go) refits them with every fifth row held out and fails
// when a stored constant drifts.
//
// Decode (one query token a sequence) is the slowest of three limits over
// a launch floor:
//   - the HBM roof: Q, K and V bytes at MemEff of the bandwidth;
//   - a stream limit: at few sequences a sequence's KV is read by a
//     bounded number of CTAs (KV splits), each streaming at DecodeStreamGBps
//     (BF16) or DecodeStreamGBpsFP8; the rows read as if a sequence's KV
//     were split DecodeSplitSeqs/batch ways (at most), so up to
//     DecodeSplitSeqs sequences take the same time: one KV head of one
//     sequence at 32,767 tokens reads 0.8 TB/s, eight heads 2.8 TB/s;
//     (0.24.0's rows instead follow FA3's own split, DecodeMaxSplits);
//   - a CTA limit: one CTA per (sequence, KV head) with the query heads of
//     its group packed (FA3's pack_gqa), DecodeCTAUs each plus
//     DecodeBlockUs per 128-key block (head dim 128; other head dims per
//     block of fa3DecodeKeys keys, by its bytes), spread over the SMs: 256
//     sequences of 8 KV heads at 1-16 cached tokens take 65-67 us where
//     bytes give 1.
//
// Prefill: CTAs of FA3's tile (fa3Tile: 128 packed rows, query tokens x
// the query heads of a KV head, by 128 keys at head dim 128) per KV head
// and sequence, each iterating over key blocks up to the causal end of
// its last row, PrefillIterUs a 128 x 128 block at head dim 128 (BF16;
// FP8 KV runs FA3's 1-byte kernel, PrefillIterUsFP8, on its own tiles),
// other tiles by their MMAs (rows x keys x head dim), plus PrefillCTAUs
// per CTA (PrefillCTAUsFP8 with an FP8 cache); the work spread over the SMs
// plus PrefillTail of the longest CTA (the last wave's imbalance), or the
// HBM roof, over a floor. A grid of few CTAs (few query tokens over long
// cached keys: one token over 100,000 cached ones is 8 CTAs of Llama-3.1-8B)
// splits each CTA's keys as FA3's scheduler does (fa3Splits), so its
// longest CTA walks a split's keys, not all of them, and a combine kernel
// (CombineUs, fitted on the 370 context rows that split) merges them.
type FA3 struct {
	// MemEff is the fraction of the HBM bandwidth the kernels reach
	// (fitted on the decode rows; the prefill rows seldom reach it).
	MemEff                                float64
	DecodeFloorUs                         float64
	DecodeStreamGBps, DecodeStreamGBpsFP8 float64
	DecodeSplitSeqs                       float64
	DecodeCTAUs, DecodeBlockUs            float64
	PrefillFloorUs                        float64
	PrefillIterUs, PrefillIterUsFP8       float64
	PrefillCTAUs, PrefillTail             float64
	// PrefillCTAUsFP8 is a prefill CTA's cost beside its iterations with
	// an FP8 cache (0: PrefillCTAUs).
	PrefillCTAUsFP8 float64
	// PrefillOneWarpgroup prices a sequence of at most 64 packed query
	// rows at head dim 64 or 128 with FA3's one-warpgroup 64-row tile
	// (fa3Tile); false: the 128-row tile.
	PrefillOneWarpgroup bool
	// CombineUs is flash_fwd_combine's time beside its bytes, when a
	// prefill splits its keys.
	CombineUs float64
	// DecodeMaxSplits, when set, prices the decode's stream limit with
	// FA3's own key split (fa3Splits, bounded by DecodeMaxSplits, vLLM's
	// flash_attn_max_num_splits_for_cuda_graph): each (sequence, KV head)
	// reads its KV with that many CTAs at DecodeStreamGBps each. 0: the
	// DecodeSplitSeqs form above, which vLLM 0.14.0's rows follow.
	DecodeMaxSplits int
	// DecodeWideTile is a decode block's cost at head dims over 128,
	// where FA3 has no one-warpgroup decode tile (hopper/heuristics.h
	// use_one_mma_wg: head dim 64 or 128 only) and runs its 128-row
	// prefill tile, over what its bytes give at head dim 128's rate;
	// DecodeWideTileFP8 multiplies it for an FP8 cache. 0: 1.
	DecodeWideTile, DecodeWideTileFP8 float64
	// DecodeFloorUsFP8 is the decode's floor with an FP8 cache (0:
	// DecodeFloorUs).
	DecodeFloorUsFP8 float64
	// DecodeBlockFP8 multiplies a decode block's cost at every head dim
	// with an FP8 cache (0: 1).
	DecodeBlockFP8 float64
	// FP8Tiles prices an FP8 cache's decode blocks with FA3's 1-byte
	// tiles (fa3DecodeKeysFP8), FP8TwoLevel with those of its two-level
	// accumulation; false: the 16-bit tiles.
	FP8Tiles, FP8TwoLevel bool
	// PrefillFP8Tiles prices an FP8 cache's prefill with FA3's 1-byte
	// tiles (fa3TileFP8; FP8TwoLevel picks the era's); false: the 16-bit
	// tiles.
	PrefillFP8Tiles bool
	// PrefillTokenKVNsFP8 is the nanoseconds an FP8-cache prefill token
	// takes per KV head (at head dim 128, by head dim) beyond the tiles'
	// work, spread over the SMs with them (pattern: TRTLLMAttn's
	// PrefillTokenKVNs). 0: none.
	PrefillTokenKVNsFP8 float64
	// PrefillTokenQNsFP8 is the same a token and query head. 0: none.
	PrefillTokenQNsFP8 float64
	// PrefillScoreUsFP8 is an FP8 prefill iteration's cost a 128 x 128
	// block of scores (query rows x keys) beside its MMAs: P's conversion
	// to FP8 (and the two-level accumulation's FP32 adds) are per score,
	// not per head dim. 0: none.
	PrefillScoreUsFP8 float64
	// PrefillScoreUs is a 16-bit prefill iteration's cost a 128 x 128
	// block of scores beside its MMAs: the softmax (its exponentials run
	// on the SM's special-function units, far slower than the tensor
	// cores: Shah et al., "FlashAttention-3", arXiv 2407.08608, 2024,
	// section 3.1, 3.9 TFLOPS of exponentials against 989 of FP16 MMA on
	// an H100 SXM5) and the masking are per score, not per head dim, and
	// FA3 overlaps them with the MMAs only in part. It sets how an
	// iteration scales with the head dim (64 costs more than half of 128,
	// 256 less than twice): fitted on 0.24.0's head dims 64-256; 0.14.0's
	// rows, all head dim 128, cannot tell it from PrefillIterUs. 0: none.
	PrefillScoreUs float64
	// PrefillWideFP8 multiplies an FP8 prefill iteration at head dim 256
	// (hopper/tile_size.h: "FP8 prefill ~0.54x of BF16 with two-level
	// accum at hd256"). 0: 1.
	PrefillWideFP8 float64
	// PrefillFloorUsFP8 is the prefill's floor with an FP8 cache (0:
	// PrefillFloorUs).
	PrefillFloorUsFP8 float64
	// ByKernel holds the terms of FA3 as other vLLM versions run it, by
	// Kernels.Attention (AttentionFA3: vLLM 0.24.0's); a kernel not in it
	// is priced by these terms.
	ByKernel map[string]*FA3
}

// fa3TileKeys is the key block FA3 iterates over at head dim 128.
const fa3TileKeys = 128

// fa3DecodeKeys is the key block of FA3's decode CTA on sm_90 at head dim
// hd (hopper/tile_size.h: head dims 64 and 128 with at most 64 packed
// query rows take one MMA warpgroup, 64 x 192 and 64 x 128; the others
// their prefill tiles over a paged cache, 128 x 128, 96, 80).
func fa3DecodeKeys(hd int) float64 {
	switch {
	case hd <= 64:
		return 192
	case hd <= 128:
		return 128
	case hd <= 192:
		return 96
	}
	return 80
}

// fa3Tile is FA3's CTA tile on sm_90 for a causal prefill of head dim hd
// over vLLM's paged KV cache (pages of 16-64 tokens, not a multiple of the
// key block, so FA3 loads them without TMA): query rows by keys an
// iteration, from vllm-project/flash-attention hopper/tile_size.h
// (tile_size_fwd_sm90, 16-bit inputs, head dim of V the same), for
// sequences of packedRows query rows (tokens x GQA group).
func fa3Tile(hd int, packedRows float64, oneWG bool) (rows, keys float64) {
	if oneWG && packedRows <= 64 && (hd == 64 || hd == 128) {
		// One MMA warpgroup (hopper/heuristics.h use_one_mma_wg).
		return 64, fa3DecodeKeys(hd)
	}
	switch {
	case hd <= 96:
		return 192, 128
	case hd <= 128:
		return 128, 128
	case hd <= 192:
		return 128, 96
	}
	return 128, 80
}

// hopperFA3 is FA3 fitted on AIConfigurator's vLLM 0.14.0 H100 SXM
// attention tables (testdata/aiconfigurator/h100_sxm/attention/vllm/0.14.0,
// 5,435 generation and 5,457 context rows per KV dtype), least squares of
// the relative error by Nelder-Mead on four rows in five (every fifth row,
// file order, held out): TestFA3AttentionRefit. An FP8 cache's prefill
// runs FA3's 1-byte kernel with the tiles before two-level accumulation
// (fa3TileFP8: 128 x 160 at head dim 128, against 128 x 128 at 16 bits):
// 1.06 us a 128 x 128 x 128 block of MMAs plus 0.59 us a 128 x 128 block
// of scores, 1.60 us a CTA, and 0.18 ns a token and KV head plus 0.19 ns a
// token and query head (at head dim 128) beside the tiles. An FP8 row of
// 0.14.0 takes 1.07-1.20x its BF16 row at every length, the most at
// 256-512 tokens, where the tiles' work alone prices it at 0.82-0.97x: the
// FP8 cache write's conversion, the kernel's in-CTA V transpose (FP8's MMA
// needs V K-major) and its per-row FP8 work are per token (the rows do not
// tell them apart). Those FP8 terms are fitted on the FP8 rows over the
// shared ones, which are fitted on the BF16 rows jointly with the
// KV-cache write's block term (hopperKVCacheSave), which the context rows
// time with the attention. CombineUs is held at what the fit gave with the
// split rows' own terms (the context rows pin it loosely; the simulator's
// verify passes lean on it): the test checks that freeing it gains under
// 0.25 points.
var hopperFA3 = FA3{
	MemEff: 0.885, DecodeFloorUs: 9.4, DecodeStreamGBps: 58.3, DecodeStreamGBpsFP8: 24.21, DecodeSplitSeqs: 16,
	DecodeCTAUs: 1.754, DecodeBlockUs: 1.679,
	PrefillFloorUs: 6.933, PrefillIterUs: 1.742, PrefillIterUsFP8: 1.056, PrefillCTAUs: 3.205, PrefillTail: 0.3362, CombineUs: 2.756,
	PrefillFP8Tiles: true, PrefillCTAUsFP8: 1.596, PrefillTokenKVNsFP8: 0.1799, PrefillTokenQNsFP8: 0.1916, PrefillScoreUsFP8: 0.5919,
	ByKernel: map[string]*FA3{AttentionFA3: &hopperFA3v024},
}

// hopperFA3v024 is FA3 as vLLM 0.24.0 runs it, fitted on AIConfigurator's
// vLLM 0.24.0 H100 SXM tables
// (testdata/aiconfigurator-0.24/h100_sxm/attention/vllm/0.24.0, kernel
// source vllm_flash_attn_fa3, head dims 64-256) as hopperFA3 is, jointly
// with the KV-cache write's 0.24.0 block term
// (hopperKVCacheSave.BlockUsFrom024) and a 16-bit iteration's cost a block
// of scores (PrefillScoreUs: 1.16 us a 128 x 128 x 128 block of MMAs plus
// 0.46 us a 128 x 128 block of scores; without it head dim 64 is priced 7%
// fast and 192 and 256 7% slow): TestFA3AttentionRefit. Its decode reads
// few sequences' KV faster than
// 0.14.0's (one sequence of one KV head at 131,071 cached tokens: 51 us,
// 0.14.0 88 us; four: 105 us, 0.14.0 286 us): the rows follow FA3's
// scheduler split bounded at 32 (vLLM's default since PR #25495), where
// 0.14.0's read as a fixed 16 CTAs a KV head (what changed between the two
// is not identified in the source read). Its decode blocks at head dims
// 192 and 256, which have no one-warpgroup tile, cost 1.48x their bytes'
// share at head dim 128's rate. An FP8 cache's decode runs FA3's 1-byte
// kernel: its tiles (fa3DecodeKeysFP8, two-level accumulation), a 10.5 us
// floor (9.3 BF16: the FP8 rows of 1-3 cached tokens take 1.0-1.5 us
// more at head dim 128, 3.4 us at 256; what the kernel does there is not
// identified), blocks at 1.02x (x1.08 more at head dims 192 and 256) and
// 18.4 GB/s a CTA of few sequences; its prefill the two-level
// accumulation tiles (128 x 192 at head dim 128), 1.47 us a block of MMAs
// (x1.45 at head dim 256, which tile_size.h notes runs at about 0.54x of
// BF16's speed) plus 0.22 us a block of scores, 1.70 us a CTA, 0.36 ns a
// token and KV head plus 0.20 ns a token and query head beside the tiles,
// and a 10.4 us floor (8.7 BF16; the decode's FP8 floor is 1.2 us over its
// BF16 one too); terms fitted on the FP8 rows over the shared ones, which
// are fitted without the FP8 kernel's terms.
var hopperFA3v024 = FA3{
	MemEff: 0.8929, DecodeFloorUs: 9.312, DecodeStreamGBps: 39.92, DecodeStreamGBpsFP8: 18.44, DecodeMaxSplits: 32,
	DecodeCTAUs: 1.645, DecodeBlockUs: 1.787, DecodeWideTile: 1.477, DecodeWideTileFP8: 1.075, DecodeBlockFP8: 1.022, DecodeFloorUsFP8: 10.51,
	PrefillFloorUs: 8.702, PrefillIterUs: 1.157, PrefillScoreUs: 0.4637, PrefillIterUsFP8: 1.467, PrefillCTAUs: 3.403, PrefillTail: 0.1467, CombineUs: 0.9027, PrefillCTAUsFP8: 1.695,
	PrefillOneWarpgroup: true, FP8Tiles: true, FP8TwoLevel: true, PrefillFP8Tiles: true, PrefillTokenKVNsFP8: 0.3601, PrefillTokenQNsFP8: 0.1958, PrefillScoreUsFP8: 0.2239, PrefillWideFP8: 1.452, PrefillFloorUsFP8: 10.35,
}

// decodeUs is the kernel time, in microseconds, of decode attention o for
// x = (batch, cached tokens) on sms SMs with hbmGBps of HBM bandwidth.
func (f *FA3) decodeUs(o *spec.Op, x []float64, sms int, hbmGBps float64) float64 {
	b, ctx := x[0], math.Max(x[1], 1)
	_, bytes := o.Work(x)
	memUs := bytes / (hbmGBps * 1e3 * f.MemEff)
	stream := f.DecodeStreamGBps
	if o.ElemBytes == 1 {
		stream = f.DecodeStreamGBpsFP8
	}
	kvBytes := 2 * ctx * float64(o.HeadDim*o.ElemBytes) // one KV head of one sequence
	streamUs := b * kvBytes / (math.Max(b, f.DecodeSplitSeqs) * stream * 1e3)
	keys := fa3DecodeKeys(o.HeadDim)
	if o.ElemBytes == 1 && f.FP8Tiles {
		keys = fa3DecodeKeysFP8(o.HeadDim, f.FP8TwoLevel)
	}
	if f.DecodeMaxSplits > 0 {
		splits := fa3Splits(b, 1, math.Ceil((ctx+1)/fa3TileKeys), float64(max(o.KVHeads, 1)), sms, f.DecodeMaxSplits)
		streamUs = kvBytes / (splits * stream * 1e3)
	}
	blockUs := f.DecodeBlockUs * keys * float64(o.HeadDim) / (fa3TileKeys * 128) // a block's bytes over head dim 128's
	if o.ElemBytes == 1 {
		blockUs *= nonZero(f.DecodeBlockFP8, 1)
	}
	if o.HeadDim > 128 {
		// No one-warpgroup decode tile: 128 query rows a CTA.
		blockUs *= nonZero(f.DecodeWideTile, 1)
		if o.ElemBytes == 1 {
			blockUs *= nonZero(f.DecodeWideTileFP8, 1)
		}
	}
	ctaUs := b * float64(max(o.KVHeads, 1)) * (f.DecodeCTAUs + blockUs*math.Ceil(ctx/keys)) / float64(sms)
	floor := f.DecodeFloorUs
	if o.ElemBytes == 1 {
		floor = nonZero(f.DecodeFloorUsFP8, floor)
	}
	return floor + math.Max(memUs, math.Max(streamUs, ctaUs))
}

// prefillUs is the kernel time, in microseconds, of the causal prefill o
// for x = (context, chunk[, sequences]) (PrefillSeqsFeature: the sequences
// the equivalent chunk stands for) on sms SMs with hbmGBps of HBM
// bandwidth. A grid too small to fill the SMs splits its keys
// (fa3Splits): each split is a CTA of its own, the longest CTA shortens,
// and a combine kernel merges the splits' partial outputs.
func (f *FA3) prefillUs(o *spec.Op, x []float64, sms int, hbmGBps float64) float64 {
	seqs, q, ctx := prefillShape(x)
	kvHeads := float64(max(o.KVHeads, 1))
	group := float64(max(o.QHeads/max(o.KVHeads, 1), 1))
	rows, keys := fa3Tile(o.HeadDim, q*group, f.PrefillOneWarpgroup)
	if o.ElemBytes == 1 && f.PrefillFP8Tiles {
		rows, keys = fa3TileFP8(o.HeadDim, q*group, f.PrefillOneWarpgroup, f.FP8TwoLevel)
	}
	tiles := math.Ceil(q * group / rows)
	// Key blocks each tile iterates over: to the causal end of its last row.
	blocks := fa3CausalBlocks(tiles, q, ctx, group, rows, keys)
	keyBlocks := math.Ceil((ctx + q) / keys)
	splits := fa3Splits(seqs, tiles, keyBlocks, kvHeads, sms, fa3MaxSplits(seqs*q))
	iter := f.PrefillIterUs
	if o.ElemBytes == 1 {
		iter = f.PrefillIterUsFP8
	}
	// An iteration's MMAs scale with the tile and the head dim.
	iter *= rows * keys * float64(o.HeadDim) / (128 * 128 * 128)
	if o.ElemBytes == 1 {
		iter += f.PrefillScoreUsFP8 * rows * keys / (128 * 128)
	} else {
		iter += f.PrefillScoreUs * rows * keys / (128 * 128)
	}
	if o.ElemBytes == 1 && o.HeadDim > 192 {
		iter *= nonZero(f.PrefillWideFP8, 1)
	}
	ctaUs := f.PrefillCTAUs
	if o.ElemBytes == 1 {
		ctaUs = nonZero(f.PrefillCTAUsFP8, ctaUs)
	}
	longest := math.Ceil(keyBlocks/splits)*iter + ctaUs
	computeUs := seqs*kvHeads*(blocks*iter+splits*tiles*ctaUs)/float64(sms) + f.PrefillTail*longest
	if o.ElemBytes == 1 {
		computeUs += seqs * q * (kvHeads*f.PrefillTokenKVNsFP8 + kvHeads*group*f.PrefillTokenQNsFP8) * float64(o.HeadDim) / 128 / 1e3
	}
	qd, kd := float64(o.QHeads*o.HeadDim), float64(o.KVHeads*o.HeadDim)
	bytes := float64(o.ElemBytes) * seqs * (2*q*qd + 2*(ctx+q)*kd)
	memUs := bytes / (hbmGBps * 1e3 * f.MemEff)
	floor := f.PrefillFloorUs
	if o.ElemBytes == 1 {
		floor = nonZero(f.PrefillFloorUsFP8, floor)
	}
	us := floor + math.Max(computeUs, memUs)
	if splits > 1 {
		// flash_fwd_combine: each split's FP32 partial output written and
		// read back.
		partial := 2 * seqs * q * qd * splits * fa3PartialBytes
		us += f.CombineUs + partial/(hbmGBps*1e3*f.MemEff)
	}
	return us
}

// prefillShape returns the equal sequences x = (context, chunk[,
// sequences]) stands for: seqs sequences of q new tokens over ctx cached
// ones, whose spec.PrefillEquivalent is (context, chunk): chunk = q x
// sqrt(seqs), context = ctx x sqrt(seqs).
func prefillShape(x []float64) (seqs, q, ctx float64) {
	seqs = 1
	if len(x) > PrefillSeqsFeature && x[PrefillSeqsFeature] > 1 {
		seqs = math.Round(x[PrefillSeqsFeature])
	}
	r := math.Sqrt(seqs)
	return seqs, math.Max(math.Round(x[1]/r), 1), math.Max(math.Round(x[0]/r), 0)
}

// fa3PartialBytes is one element of a split's partial output (FP32).
const fa3PartialBytes = 4

// fa3MaxSplits is the bound on the key splits vLLM gives FA3 for a step of
// tokens query tokens: with CUDA graphs on (FULL_AND_PIECEWISE, the
// default from v0.11) its FlashAttention metadata builder passes
// flash_attn_max_num_splits_for_cuda_graph (32: vllm-project/vllm PR
// #25495, September 2025) when the step's tokens are within the largest
// capture size (512 by default), else 0, and FA3 bounds the split by its
// own heuristic (vllm/v1/attention/backends/flash_attn.py,
// FlashAttentionMetadataBuilder.build). 0: FA3's heuristic.
func fa3MaxSplits(tokens float64) int {
	if tokens <= fa3MaxCaptureTokens {
		return 32
	}
	return 0
}

// fa3MaxCaptureTokens is vLLM's largest CUDA-graph capture size by
// default (max_num_seqs 256 x 2, at most 512: vllm/config/vllm.py).
const fa3MaxCaptureTokens = 512

// fa3Splits is how many ways FA3 splits the keys of each (sequence, KV
// head, query tile) of seqs sequences of tiles query tiles over keyBlocks
// key blocks, kvHeads KV heads, on sms SMs, bounded by maxSplits (0: FA3's
// own bound). Read from vllm-project/flash-attention (hopper/heuristics.h
// num_splits_heuristic, hopper/flash_api.cpp get_num_splits,
// hopper/flash_prepare_scheduler.cu prepare_varlen_num_blocks_kernel):
// the bound, when vLLM gives none, assumes one sequence (varlen) and is 1
// for a causal grid of at least 0.8 of the SMs or at most 4 key blocks,
// else the fewest splits reaching 85% of the best wave efficiency (at
// most 128, the SMs, the key blocks); each sequence then takes
// ceil(keyBlocks / blocks a SM), blocks a SM = ceil(all tiles' key blocks
// x 1.1 x KV heads / SMs), within the bound.
func fa3Splits(seqs, tiles, keyBlocks, kvHeads float64, sms, maxSplits int) float64 {
	static := maxSplits
	if static <= 0 {
		static = fa3SplitHeuristic(int(kvHeads*tiles), sms, int(keyBlocks))
	}
	if static <= 1 {
		return 1
	}
	perSM := math.Ceil(seqs * tiles * keyBlocks * 1.1 * kvHeads / float64(sms))
	return math.Max(math.Min(math.Ceil(keyBlocks/perSM), float64(static)), 1)
}

// fa3SplitHeuristic is FA3's num_splits_heuristic for a causal grid of
// mblocks CTAs over nBlocks key blocks on sms SMs (max_splits 128).
func fa3SplitHeuristic(mblocks, sms, nBlocks int) int {
	if float64(mblocks) >= 0.8*float64(sms) || nBlocks <= 4 {
		return 1
	}
	most := min(128, sms, nBlocks)
	eff := func(s int) float64 {
		waves := float64(mblocks*s) / float64(sms)
		return waves / math.Ceil(waves)
	}
	best := 0.0
	for s := 1; s <= most; s++ {
		best = math.Max(best, eff(s))
	}
	for s := 1; s <= most; s++ {
		if eff(s) >= 0.85*best {
			return s
		}
	}
	return 1
}

// fa3ExactTiles is how many tiles fa3CausalBlocks sums one by one; past
// it, the sum's closed form with each ceiling taken as half a block
// (under 0.2% off at 64 tiles, and it keeps the prefill's price O(1)).
const fa3ExactTiles = 64

// fa3CausalBlocks is the key blocks the tiles of a causal prefill of q
// tokens over ctx cached ones iterate over, tiles of tileRows packed
// rows (group query heads a token) over blocks of tileKeys keys: each to
// the causal end of its last row.
func fa3CausalBlocks(tiles, q, ctx, group, tileRows, tileKeys float64) float64 {
	rows := tileRows / group // tokens a tile
	if tiles <= fa3ExactTiles {
		blocks := 0.0
		for t := 1.0; t <= tiles; t++ {
			blocks += math.Ceil((ctx + math.Min(q, math.Ceil(t*rows))) / tileKeys)
		}
		return blocks
	}
	// Tiles ending before q: ends t x rows; the rest end at q.
	inner := math.Min(math.Floor(q/rows), tiles)
	ends := ctx*inner + rows*inner*(inner+1)/2 + (tiles-inner)*(ctx+q)
	return ends/tileKeys + tiles/2
}

// nonZero returns v, or def when v is 0.
func nonZero(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}
