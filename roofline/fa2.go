package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// FA2 prices attention as vLLM runs it on Ampere (sm_80): its FLASH_ATTN
// backend (vllm/v1/attention/backends/flash_attn.py) calls vllm-flash-attn's
// FlashAttention-2 (fa_utils.py get_flash_attn_version: FA3 needs sm_90)
// through flash_attn_varlen_func with the paged KV cache's block table, for
// prefill and decode alike. What the kernel runs, read from
// vllm-project/flash-attention's csrc/flash_attn (flash_api.cpp
// mha_varlen_fwd, src/flash_fwd_launch_template.h) at the commits of
// vLLM 0.14's era (January 2026):
//   - a paged KV cache always takes the split-KV kernel
//     (run_mha_fwd_splitkv_dispatch: force_split_kernel), whose CTA is 4
//     warps over a tile of kBlockM = 64 query rows by kBlockN keys (256 at
//     head dim 64, 128 at 65-128, 64 above: fa2BlockN), one query head a
//     CTA;
//   - a step of one query token a sequence with more query heads than KV
//     heads (decode under GQA) is reshaped so a KV head's query heads are
//     its query rows (seqlenq_ngroups_swapped: a CTA of 64 rows takes up
//     to 64 of them), and only then may the keys be split: num_splits is
//     FA2's heuristic (num_splits_heuristic over batch x KV heads x row
//     tiles CTAs on twice the SMs, at most 128 splits, the fewest reaching
//     85% of the best wave efficiency among the eligible splits: fa2Splits),
//     and a split grid runs a combine kernel after it; a prefill, or an
//     MHA decode, is not split (num_splits 0).
//
// Decode is the slower of two limits (no floor of its own: a floor fits
// to nothing, the one wave of CTAs carries the fixed time): the HBM roof
// (Q, K, V bytes at MemEff of the bandwidth) and the CTAs' work: the
// grid's CTAs in waves over two CTAs an SM (the occupancy the heuristic
// assumes), each DecodeCTAUs plus DecodeBlockUs a key block of its split
// (head dim 128's 128 keys; other head dims by their block's bytes).
// Prefill: CTAs of 64 query rows of one query head, each iterating over
// key blocks up to the causal end of its last row, PrefillIterUs a 64 x
// 128 block at head dim 128 (other tiles by their MMAs), plus PrefillCTAUs
// a CTA, spread over the SMs, plus PrefillTail of the longest CTA, or the
// HBM roof, over a floor.
//
// Terms are fitted on AIConfigurator's vLLM 0.14.0 A100 SXM attention
// tables (testdata/aiconfigurator/a100_sxm/attention/vllm/0.14.0, kernel
// source vllm_flash_attn, head dim 128, BF16 KV; its 0.22.0 directory
// reuses them) with every fifth row held out: TestFA2AttentionRefit
// (cost/fa2_test.go). Each row is one CUDA-graph replay of one layer's
// FlashAttentionImpl.forward (the KV-cache write, the simulator's own
// attn_kv_cache_save op priced beside, and the kernel): AIConfigurator
// collector/vllm/collect_attn.py at 5ef50c9, as for Hopper's FA3 (fa3.go).
type FA2 struct {
	MemEff                                   float64
	DecodeCTAUs, DecodeBlockUs               float64
	PrefillFloorUs                           float64
	PrefillIterUs, PrefillCTAUs, PrefillTail float64
	// CombineUs is the combine kernel's time beside its bytes when a
	// decode splits its keys, CombineSplitUs what each split adds to it
	// (each of its CTAs walks every split's partial row: one sequence of
	// one KV head over 16,384 cached tokens, 110-128 splits, takes 45-51
	// us where its 8 MB of KV take 4 us at the HBM roof).
	CombineUs, CombineSplitUs float64
	// DecodeGQAUs is what a decode under GQA (the reshaped query) adds
	// to the floor; DecodeSwapUs what the reshape's copies add where the
	// reshape is no view (more than one sequence and more than one KV
	// head: mha_varlen_fwd transposes Q from (b, KV heads x group) to
	// (b x group, KV heads) and the output back, each a copy kernel). The
	// A100 rows of 1-16 cached tokens: MHA 10.7-11.2 us, one KV head
	// under GQA 12.1-12.9 us at every batch, two to eight KV heads 12.3-12.6
	// us at one sequence and 17.2-19.9 us at 2-16.
	DecodeGQAUs, DecodeSwapUs float64
}

// fa2BlockM is the query rows of FA2's split-KV CTA at every head dim.
const fa2BlockM = 64

// fa2BlockN is the key block of FA2's split-KV kernel at head dim hd
// (run_mha_fwd_splitkv_dispatch, set_params_splitkv).
func fa2BlockN(hd int) float64 {
	switch {
	case hd <= 64:
		return 256
	case hd <= 128:
		return 128
	}
	return 64
}

// fa2MaxSplits is the most splits FA2's heuristic gives (set_params_splitkv).
const fa2MaxSplits = 128

// fa2Splits is FA2's num_splits_heuristic for a grid of ctas CTAs over
// nBlocks key blocks on slots concurrent CTAs (twice the SMs): one split
// when the grid almost fills the slots, else the fewest eligible splits
// (one that changes the blocks a split walks) whose wave efficiency is at
// least 85% of the best, within fa2MaxSplits, the slots and the blocks.
func fa2Splits(ctas, slots, nBlocks int) int {
	if float64(ctas) >= 0.8*float64(slots) {
		return 1
	}
	most := min(fa2MaxSplits, slots, nBlocks)
	ceilDiv := func(a, b int) int { return (a + b - 1) / b }
	eligible := func(s int) bool { return s == 1 || ceilDiv(nBlocks, s) != ceilDiv(nBlocks, s-1) }
	eff := func(s int) float64 {
		waves := float64(ctas*s) / float64(slots)
		return waves / math.Ceil(waves)
	}
	best := 0.0
	for s := 1; s <= most; s++ {
		if eligible(s) {
			best = math.Max(best, eff(s))
		}
	}
	for s := 1; s <= most; s++ {
		if eligible(s) && eff(s) >= 0.85*best {
			return s
		}
	}
	return 1
}

// fa2CTAsPerSM is the CTAs an SM holds at once that FA2's split heuristic
// assumes (set_params_splitkv: "we're using 128 threads per block").
const fa2CTAsPerSM = 2

// decodeUs is the kernel time, in microseconds, of decode attention o for
// x = (batch, cached tokens) on sms SMs with hbmGBps of HBM bandwidth.
func (f *FA2) decodeUs(o *spec.Op, x []float64, sms int, hbmGBps float64) float64 {
	b, kvLen := math.Max(x[0], 1), math.Max(x[1], 0)+1
	kvHeads := max(o.KVHeads, 1)
	group := max(o.QHeads/kvHeads, 1)
	heads, rowTiles := max(o.QHeads, 1), 1
	if group > 1 {
		// seqlenq_ngroups_swapped: a KV head's query heads are the rows.
		heads, rowTiles = kvHeads, (group+fa2BlockM-1)/fa2BlockM
	}
	blockN := fa2BlockN(o.HeadDim)
	nBlocks := int(math.Ceil(kvLen / blockN))
	slots := fa2CTAsPerSM * sms
	ctas := int(b) * heads * rowTiles
	splits := 1
	if group > 1 {
		splits = fa2Splits(ctas, slots, nBlocks)
	}
	blockUs := f.DecodeBlockUs * blockN * float64(o.HeadDim) / (128 * 128) // a block's bytes over head dim 128's
	perCTA := f.DecodeCTAUs + math.Ceil(float64(nBlocks)/float64(splits))*blockUs
	ctaUs := math.Ceil(float64(ctas*splits)/float64(slots)) * perCTA
	_, bytes := o.Work(x)
	memUs := bytes / (hbmGBps * 1e3 * f.MemEff)
	us := math.Max(memUs, ctaUs)
	if group > 1 {
		us += f.DecodeGQAUs
		if b > 1 && kvHeads > 1 {
			us += f.DecodeSwapUs
		}
	}
	if splits > 1 {
		// The combine kernel: each split's FP32 partial output written
		// and read back.
		partial := 2 * b * float64(o.QHeads*o.HeadDim) * float64(splits) * fa3PartialBytes
		us += f.CombineUs + float64(splits)*f.CombineSplitUs + partial/(hbmGBps*1e3*f.MemEff)
	}
	return us
}

// prefillUs is the kernel time, in microseconds, of the causal prefill o
// for x = (context, chunk[, sequences]) on sms SMs with hbmGBps of HBM
// bandwidth. A step of one query token a sequence runs as a decode does.
func (f *FA2) prefillUs(o *spec.Op, x []float64, sms int, hbmGBps float64) float64 {
	seqs, q, ctx := prefillShape(x)
	if q <= 1 {
		return f.decodeUs(o, []float64{seqs, ctx}, sms, hbmGBps)
	}
	heads := float64(max(o.QHeads, 1))
	blockN := fa2BlockN(o.HeadDim)
	tiles := math.Ceil(q / fa2BlockM)
	blocks := fa3CausalBlocks(tiles, q, ctx, 1, fa2BlockM, blockN)
	keyBlocks := math.Ceil((ctx + q) / blockN)
	// An iteration's MMAs scale with the tile and the head dim.
	iter := f.PrefillIterUs * blockN * float64(o.HeadDim) / (128 * 128)
	longest := keyBlocks*iter + f.PrefillCTAUs
	computeUs := seqs*heads*(blocks*iter+tiles*f.PrefillCTAUs)/float64(sms) + f.PrefillTail*longest
	qd, kd := float64(o.QHeads*o.HeadDim), float64(o.KVHeads*o.HeadDim)
	bytes := float64(o.ElemBytes) * seqs * (2*q*qd + 2*(ctx+q)*kd)
	memUs := bytes / (hbmGBps * 1e3 * f.MemEff)
	return f.PrefillFloorUs + math.Max(computeUs, memUs)
}

// ampereFA2 is FA2 fitted on AIConfigurator's vLLM 0.14.0 A100 SXM
// attention tables (5,431 generation and 5,457 context rows, head dim 128,
// BF16 KV), least squares of the relative error by Nelder-Mead on four
// rows in five (every fifth, file order, held out): TestFA2AttentionRefit.
// Held out, the generation rows 6.2% MAPE (bias -1.8%), the context rows
// 7.4% (-1.7%), where the attention classes' curves price them at 28.8%
// and 30.2%.
var ampereFA2 = FA2{
	MemEff: 0.6893, DecodeCTAUs: 4.617, DecodeBlockUs: 2.944, CombineUs: 4.991, CombineSplitUs: 0.2214, DecodeGQAUs: 1.436, DecodeSwapUs: 6.525,
	PrefillFloorUs: 4.317, PrefillIterUs: 2.425, PrefillCTAUs: 0.2652, PrefillTail: 0.9944,
}
