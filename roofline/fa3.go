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
// dim 128, BF16 and FP8 KV caches): each row is one CUDA-graph replay of
// one layer's FlashAttentionImpl.forward, which runs the KV-cache write
// (reshape_and_cache_flash) and the attention kernel
// (ai-dynamo/aiconfigurator collector/vllm/collect_attn.py at 5ef50c9 and
// d5bad971c: benchmark_with_power, repeat_n 1, 6 replays). The KV-cache
// write is the simulator's own attn_kv_cache_save op, priced beside; the
// terms here are the attention kernel's. TestFA3AttentionRefit
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
//   - a CTA limit: one CTA per (sequence, KV head) with the query heads of
//     its group packed (FA3's pack_gqa), DecodeCTAUs each plus
//     DecodeBlockUs per 128-key block, spread over the SMs: 256 sequences
//     of 8 KV heads at 1-16 cached tokens take 65-67 us where bytes give 1.
//
// Prefill: CTAs of 128 packed rows (query tokens x the query heads of a
// KV head) per KV head and sequence, each iterating over 128-key blocks up
// to the causal end of its last row, PrefillIterUs a block (BF16; FP8 KV
// runs FP8 tensor cores on dequantised tiles, PrefillIterUsFP8) scaled by
// head dim / 128, plus PrefillCTAUs per CTA; the work spread over the SMs
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
	// CombineUs is flash_fwd_combine's time beside its bytes, when a
	// prefill splits its keys.
	CombineUs float64
}

// fa3TileRows and fa3TileKeys are the CTA tile of FA3 at head dim 128: 128
// query rows by 128 keys an iteration (a stated approximation for other
// head dims, whose time scales by head dim instead).
const fa3TileRows, fa3TileKeys = 128, 128

// hopperFA3 is FA3 fitted on AIConfigurator's vLLM 0.14.0 H100 SXM
// attention tables (testdata/aiconfigurator/h100_sxm/attention/vllm/0.14.0,
// 5,435 generation and 5,457 context rows per KV dtype), least squares of
// the relative error by Nelder-Mead on four rows in five (every fifth row,
// file order, held out): TestFA3AttentionRefit.
var hopperFA3 = FA3{
	MemEff: 0.885, DecodeFloorUs: 9.4, DecodeStreamGBps: 58.3, DecodeStreamGBpsFP8: 24.21, DecodeSplitSeqs: 16,
	DecodeCTAUs: 1.754, DecodeBlockUs: 1.679,
	PrefillFloorUs: 5.107, PrefillIterUs: 1.617, PrefillIterUsFP8: 1.826, PrefillCTAUs: 3.228, PrefillTail: 0.8613, CombineUs: 2.756,
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
	ctaUs := b * float64(max(o.KVHeads, 1)) * (f.DecodeCTAUs + f.DecodeBlockUs*math.Ceil(ctx/fa3TileKeys)) / float64(sms)
	return f.DecodeFloorUs + math.Max(memUs, math.Max(streamUs, ctaUs))
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
	tiles := math.Ceil(q * group / fa3TileRows)
	// Key blocks each tile iterates over: to the causal end of its last row.
	blocks := fa3CausalBlocks(tiles, q, ctx, group)
	keyBlocks := math.Ceil((ctx + q) / fa3TileKeys)
	splits := fa3Splits(seqs, tiles, keyBlocks, kvHeads, sms, fa3MaxSplits(seqs*q))
	iter := f.PrefillIterUs
	if o.ElemBytes == 1 {
		iter = f.PrefillIterUsFP8
	}
	iter *= float64(o.HeadDim) / 128
	longest := math.Ceil(keyBlocks/splits)*iter + f.PrefillCTAUs
	computeUs := seqs*kvHeads*(blocks*iter+splits*tiles*f.PrefillCTAUs)/float64(sms) + f.PrefillTail*longest
	qd, kd := float64(o.QHeads*o.HeadDim), float64(o.KVHeads*o.HeadDim)
	bytes := float64(o.ElemBytes) * seqs * (2*q*qd + 2*(ctx+q)*kd)
	memUs := bytes / (hbmGBps * 1e3 * f.MemEff)
	us := f.PrefillFloorUs + math.Max(computeUs, memUs)
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
// tokens over ctx cached ones iterate over, tiles of fa3TileRows packed
// rows (group query heads a token): each to the causal end of its last
// row.
func fa3CausalBlocks(tiles, q, ctx, group float64) float64 {
	rows := fa3TileRows / group // tokens a tile
	if tiles <= fa3ExactTiles {
		blocks := 0.0
		for t := 1.0; t <= tiles; t++ {
			blocks += math.Ceil((ctx + math.Min(q, math.Ceil(t*rows))) / fa3TileKeys)
		}
		return blocks
	}
	// Tiles ending before q: ends t x rows; the rest end at q.
	inner := math.Min(math.Floor(q/rows), tiles)
	ends := ctx*inner + rows*inner*(inner+1)/2 + (tiles-inner)*(ctx+q)
	return ends/fa3TileKeys + tiles/2
}
