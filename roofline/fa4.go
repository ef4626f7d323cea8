package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// FA4 prices attention as vLLM 0.24.0 runs FlashAttention-4 on Hopper: the
// CuTe-DSL kernels of vllm-project/flash-attention (flash_attn/cute, read at
// 1c726f3c, the June 2026 commit whose interface.py matches the line
// AIConfigurator's 0.24.0 collector cites). vLLM picks FA4 on sm_90 for
// head dims FA3 lacks (get_flash_attn_version with the layer's head size:
// FA3 stops at 256, FA4's sm_90 path takes up to 512), so on Hopper it runs
// only there: AIConfigurator's vLLM 0.24.0 H100 rows at head dim 512
// (kernel source vllm_flash_attn_fa4). What runs, from the source:
//
//   - The forward (flash_fwd_sm90.py): at head dim 512 a CTA tile of 64
//     query rows by 64 keys (interface.py _tile_size_fwd_sm90), one K/V
//     stage, one CTA an SM; the query heads of a KV head packed into the
//     rows (pack_gqa). vLLM passes cu_seqlens_q, so the grid is
//     SingleTileVarlenScheduler's (tile_scheduler.py): one CTA a (sequence,
//     KV head, query tile, split), and each CTA finds its sequence by
//     walking the sequences from the first, 31 a step (a warp's prefix
//     sum): a CTA of sequence i takes floor(i/31) steps (ScanUs each), so a
//     batch's CTAs cost more the more sequences it has (one KV head at 2
//     cached tokens, the rows' time a wave of 132 CTAs: 9 us at 64-128
//     sequences, 22 us at 1,024, 33 us at 2,048).
//   - The key split: FA4 takes num_splits >= 1 as the split count, not as
//     a bound (interface.py _flash_attn_fwd; num_splits_heuristic only for
//     num_splits < 1: one split when the query tiles fill the SMs or there
//     are at most 4 key blocks). vLLM's FlashAttention metadata builder
//     decides whether to schedule ahead from get_flash_attn_version()
//     without the head size, which is 3 on Hopper (self.aot_schedule, read
//     in vllm/v1/attention/backends/flash_attn.py on a main branch after
//     0.24.0; the 0.24.0 file was not read), and so, under full CUDA
//     graphs, passes flash_attn_max_num_splits_for_cuda_graph (32) for
//     every step within the largest capture size (fa3MaxSplits), else 0.
//     The 0.24.0 rows show exactly this: a decode of 512 sequences of one
//     KV head over 2 cached tokens takes 1.7 ms (16,384 CTAs), one of 1,024
//     sequences, past the collector's capture size, 173 us (1,024 CTAs). An
//     empty split still runs its CTA (it writes a zero partial output and a
//     -inf LSE).
//   - The combine (flash_fwd_combine.py, launched when the split count is
//     over 1): with cu_seqlens its grid is ceil(total_q x query heads / 8)
//     x ceil(head dim / 128) x sequences CTAs, of which only each
//     sequence's own rows do work; the rest exit at once. The CTAs grow
//     as the square of the batch (512 sequences of 8 query heads: 1,048,576
//     CTAs), CombineCTAUs each over the SMs.
//
// Decode is the CTAs' fixed cost (CTAUs: the query load, the first key
// block, the epilogue; plus the scan) over the SMs, plus the key blocks
// past each CTA's first at MemEff of the HBM bandwidth, or the longest
// CTA (BlockUs a block when its CTA streams alone: one sequence of one KV
// head over 131,072 keys, 64 blocks a split, takes 199 us), plus the
// combine. A prefill of more than one token a sequence is CTAs of the
// causal tile iterating over key blocks to the causal end of their last
// row (IterUs a 64 x 64 block at head dim 512, other head dims by their
// MMAs),
// CTAUs a CTA, over the SMs or the longest CTA (the scheduler hands the
// longest tiles out first), or the HBM roof, plus the combine; one token a
// sequence is a decode. TokenUs a query token is what the rows take beside
// these terms and the KV-cache write the simulator prices as its own op
// (attn_kv_cache_save, the copy class's bytes): 2.2 ns a token, fitted;
// it stands for the write's per-token cost at this head dim (one CTA a
// token in reshape_and_cache_flash) as much as for the kernel's, which
// the rows cannot tell apart. The terms are fitted on the H100 rows with
// every fifth held out (cost.TestFA4AttentionRefit); head dims other than
// 512 are not measured.
type FA4 struct {
	// CTAUs is a forward CTA's fixed cost (its first key block included).
	CTAUs float64
	// ScanUs is one step of the varlen tile scheduler's walk over the
	// sequences (31 a step).
	ScanUs float64
	// BlockUs is a 64-key block at head dim 512 when its CTA streams its
	// split alone (latency-bound, one K/V stage).
	BlockUs float64
	// MemEff is the fraction of the HBM bandwidth the key blocks past each
	// CTA's first are read at.
	MemEff float64
	// IterUs is a prefill iteration, a 64-row by 64-key tile at head dim
	// 512 (QK and PV MMAs).
	IterUs float64
	// TokenUs is a cost a query token beside the tiles (see FA4).
	TokenUs float64
	// CombineUs is flash_fwd_combine's floor, CombineCTAUs a combine CTA
	// (most exit at once) spread over the SMs.
	CombineUs, CombineCTAUs float64
}

// hopperFA4 is FA4 fitted on AIConfigurator's vLLM 0.24.0 H100 SXM
// attention tables (testdata/aiconfigurator-0.24/h100_sxm/attention/vllm/
// 0.24.0, kernel source vllm_flash_attn_fa4: head dim 512, BF16 KV, query
// heads 1-16 over 1-2 KV heads; 800 generation and 578 context rows),
// the mean absolute relative error minimised by Nelder-Mead on four rows in
// five
// (every fifth row, file order, held out): cost.TestFA4AttentionRefit.
// Held out: generation 5.9% (bias -2.0%), context 7.1% (+1.9%).
var hopperFA4 = FA4{
	CTAUs: 7.31, ScanUs: 0.7646, BlockUs: 3.382, MemEff: 0.891,
	IterUs: 2.747, CombineUs: 7.358, CombineCTAUs: 0.08599, TokenUs: 0.002227,
}

// fa4TileRows and fa4TileKeys are FA4's forward tile on sm_90 at head
// dims over 256 (interface.py _tile_size_fwd_sm90: 64 query rows by 64
// keys, PV not from registers), the only head dims it is priced at.
const fa4TileRows, fa4TileKeys = 64, 64

// fa4CombineRows is the query rows (tokens x heads) of a combine CTA at
// head dims over 64 (flash_fwd_combine's tile_m), fa4CombineCols its head
// dim block.
const fa4CombineRows, fa4CombineCols = 8, 128

// fa4ScanGroup is how many sequences a step of the varlen scheduler's walk
// covers (a warp's lanes but the last).
const fa4ScanGroup = 31

// fa4ScanSteps returns the mean and the most steps of the varlen
// scheduler's walk over the CTAs of seqs sequences: floor(i/31) for
// sequence i.
func fa4ScanSteps(seqs float64) (mean, most float64) {
	n := math.Max(math.Round(seqs), 1)
	k := math.Floor(n / fa4ScanGroup)
	sum := fa4ScanGroup*k*(k-1)/2 + k*(n-fa4ScanGroup*k)
	return sum / n, math.Floor((n - 1) / fa4ScanGroup)
}

// fa4Splits is the key split FA4 runs: maxSplits when vLLM passes one (FA4
// takes it as the count), else num_splits_heuristic over totalM query
// tiles (sequences x KV heads x tiles) and nBlocks key blocks on sms SMs.
func fa4Splits(totalM, nBlocks float64, maxSplits, sms int) float64 {
	if maxSplits > 0 {
		return float64(maxSplits)
	}
	if nBlocks <= 4 || totalM <= 0 {
		return 1
	}
	return math.Max(math.Min(math.Min(math.Floor(float64(sms)/totalM), 128), nBlocks), 1)
}

// fa4MaxSplits is the split bound vLLM passes for a step of tokens query
// tokens when the largest CUDA-graph capture size is capture (0: vLLM's
// default, fa3MaxCaptureTokens; negative: no full CUDA graphs, so none).
func fa4MaxSplits(tokens float64, capture int) int {
	if capture < 0 {
		return 0
	}
	if capture == 0 {
		return fa3MaxSplits(tokens)
	}
	if tokens <= float64(capture) {
		return fa3MaxSplits(0)
	}
	return 0
}

// decodeUs is the time, in microseconds, of decode attention o for x =
// (batch, cached tokens) on sms SMs with hbmGBps of HBM bandwidth, when
// the largest capture size is capture (0: vLLM's default).
func (f *FA4) decodeUs(o *spec.Op, x []float64, sms int, hbmGBps float64, capture int) float64 {
	b, ctx := math.Max(x[0], 1), math.Max(x[1], 0)
	return f.queryUs(o, b, 1, ctx, fa4MaxSplits(b, capture), sms, hbmGBps)
}

// prefillUs is the time, in microseconds, of the causal prefill o for x =
// (context, chunk[, sequences]) (prefillShape) on sms SMs with hbmGBps of
// HBM bandwidth, when the largest capture size is capture.
func (f *FA4) prefillUs(o *spec.Op, x []float64, sms int, hbmGBps float64, capture int) float64 {
	seqs, q, ctx := prefillShape(x)
	return f.queryUs(o, seqs, q, ctx, fa4MaxSplits(seqs*q, capture), sms, hbmGBps)
}

// queryUs prices seqs sequences of q query tokens over ctx cached ones
// with vLLM's split bound maxSplits.
func (f *FA4) queryUs(o *spec.Op, seqs, q, ctx float64, maxSplits, sms int, hbmGBps float64) float64 {
	kvHeads := float64(max(o.KVHeads, 1))
	qHeads := float64(max(o.QHeads, 1))
	group := math.Max(qHeads/kvHeads, 1)
	rows, keys := float64(fa4TileRows), float64(fa4TileKeys)
	tiles := math.Ceil(q * group / rows)
	keyBlocks := math.Ceil((ctx + q) / keys)
	splits := fa4Splits(seqs*kvHeads*tiles, keyBlocks, maxSplits, sms)
	perSplit := math.Ceil(keyBlocks / splits)
	ctas := seqs * kvHeads * tiles * splits
	scanMean, scanMost := fa4ScanSteps(seqs)
	cta := f.CTAUs + f.ScanUs*scanMean
	var us float64
	if q <= 1 {
		// Decode: each CTA's first block rides on its fixed cost; the
		// rest stream from HBM.
		nonEmpty := math.Ceil(keyBlocks / perSplit)
		blockBytes := keys * float64(o.HeadDim) * 2 * float64(o.ElemBytes)
		rest := seqs * kvHeads * tiles * (keyBlocks - nonEmpty) * blockBytes
		fill := ctas*cta/float64(sms) + rest/(hbmGBps*1e3*f.MemEff)
		longest := f.CTAUs + f.ScanUs*scanMost + (perSplit-1)*f.BlockUs
		us = math.Max(fill, longest)
	} else {
		iter := f.IterUs * float64(o.HeadDim) / 512 // an iteration's MMAs
		blocks := fa3CausalBlocks(tiles, q, ctx, group, rows, keys)
		longest := perSplit*iter + f.CTAUs + f.ScanUs*scanMost
		total := seqs*kvHeads*blocks*iter + ctas*cta
		computeUs := math.Max(total/float64(sms), longest)
		qd, kd := qHeads*float64(o.HeadDim), kvHeads*float64(o.HeadDim)
		bytes := float64(o.ElemBytes) * seqs * (2*q*qd + 2*(ctx+q)*kd)
		memUs := bytes / (hbmGBps * 1e3 * f.MemEff)
		us = math.Max(computeUs, memUs)
	}
	us += f.TokenUs * seqs * q
	if splits > 1 {
		tokens := seqs * q
		combineCTAs := math.Ceil(tokens*qHeads/fa4CombineRows) * math.Ceil(float64(o.HeadDim)/fa4CombineCols) * seqs
		partial := splits * tokens * qHeads * float64(o.HeadDim) * fa3PartialBytes
		us += f.CombineUs + combineCTAs*f.CombineCTAUs/float64(sms) + partial/(hbmGBps*1e3*f.MemEff)
	}
	return us
}
