package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// TRTLLMAttn prices attention as vLLM runs it on Blackwell (sm_100): its
// FLASHINFER backend calls FlashInfer's TRT-LLM-generated FMHA kernels,
// trtllm_batch_decode_with_kv_cache for decodes and
// trtllm_batch_context_with_kv_cache for prefills (vLLM
// vllm/v1/attention/backends/flashinfer.py; vllm/utils/flashinfer.py,
// use_trtllm_attention: on compute capability 10.x both phases, with a
// BF16 KV cache by auto-detection and always when the query is FP8, as it
// is with an FP8 KV cache). A request of one query token is a decode
// (the backend's reorder_batch_threshold 1), so a one-token prefill runs
// the decode kernel. The terms are fitted on NVIDIA AIConfigurator's vLLM
// 0.24.0 B200 SXM tables (context_attention_perf and
// generation_attention_perf, kernel sources vllm_flashinfer_trtllmprefill
// and vllm_flashinfer_trtllmdecode; head dims 64-512, BF16 and FP8 KV):
// each row is one CUDA-graph replay of one layer's KV-cache write and
// attention (ai-dynamo/aiconfigurator collector/vllm/collect_attn.py at
// d5bad971c, six replays averaged). TestTRTLLMAttentionRefit
// (cost/trtllmattn_test.go) refits them with every fifth row held out and
// fails when a stored constant drifts.
//
// Decode is the slower of two limits over a launch floor:
//   - memory: the Q, K and V bytes at MemEff of the HBM bandwidth after
//     MemLatencyUs; a replayed layer (Roofline.WarmKV, the tables' rows)
//     whose KV fits WarmKVMB reads it from the L2 at L2GBps instead (the
//     rows step there: 64 sequences of 8 KV heads at head dim 128 take
//     14.9 us over 256 tokens, 67 MB, and 38.7 us over 512, 134 MB). 126
//     MB is the B200's L2 as Chips and Cheese measured it ("Nvidia's B200:
//     Keeping the CUDA Juggernaut Rolling", December 2025; other
//     write-ups say 96 MB): any figure from 67 to 134 MB prices the rows
//     alike. A served step reads each layer's KV from HBM;
//   - CTAs: one CTA a (sequence, KV head), the query heads of the group
//     packed in it; when they leave SMs idle the KV is split over up to
//     MaxSplits CTAs a sequence (the kernel's multi-CTA KV mode:
//     flashinfer include/flashinfer/trtllm/fmha/fmhaKernels.cuh,
//     numCtasPerSeqKv = min(KV steps, SMs / CTAs)), each iterating over
//     its 128-key blocks at IterUs a block after CTAUs + CTADimUs x head
//     dim / 128 (x 1 + GroupCost for 9-16 packed query rows a KV head,
//     query heads x query tokens, x 1 + 2 GroupCost past 16; x
//     FP8CTAScale with FP8 KV), the CTAs spread over the SMs.
//
// Prefill: CTA tiles of 128 query tokens of one query head, each
// PrefillCTAUs plus PrefillIterUs a 128-key block to the causal end of its
// last row (FP8 KV: the FP8 terms), the block time scaled by (head dim /
// 128) to PrefillDimExp under 128 and PrefillDimExpWide over it, spread
// over the SMs, plus PrefillTail of the longest CTA, plus per-token work
// the rows show beside the tiles (PrefillTokenKVNs a token and KV head:
// the KV-cache write into FlashInfer's HND cache and the tiles' per-row
// work cannot be told apart in them), or the memory time, over a floor.
// The engine's equivalent prefill of PrefillSeqsFeature sequences is read
// as that many equal sequences (prefillShape, fa3.go).
type TRTLLMAttn struct {
	DecodeFloorUs, MemEff, MemLatencyUs float64
	L2GBps, WarmKVMB                    float64
	MaxSplits                           float64
	CTAUs, CTADimUs, IterUs             float64
	GroupCost, FP8CTAScale              float64
	PrefillFloorUs                      float64
	PrefillCTAUs, PrefillCTAUsFP8       float64
	PrefillIterUs, PrefillIterUsFP8     float64
	PrefillDimExp, PrefillDimExpWide    float64
	PrefillTail                         float64
	// PrefillTokenKVNs (FP8: PrefillTokenKVNsFP8) is the nanoseconds a
	// prefill token takes per KV head beyond the tiles' work.
	PrefillTokenKVNs, PrefillTokenKVNsFP8 float64
}

// trtllmKVStep is the keys a CTA iterates over at a time.
const trtllmKVStep = 128

// blackwellTRTLLM is TRTLLMAttn fitted on AIConfigurator's vLLM 0.24.0
// B200 SXM attention tables (testdata/aiconfigurator-0.24/b200_sxm):
// TestTRTLLMAttentionRefit.
var blackwellTRTLLM = TRTLLMAttn{
	DecodeFloorUs: 5.961, MemEff: 0.9122, MemLatencyUs: 4.955, L2GBps: 9533, WarmKVMB: 126,
	MaxSplits: 16, CTAUs: 0.5989, CTADimUs: 0.6532, IterUs: 0.3794, GroupCost: 0.4862, FP8CTAScale: 0.8996,
	PrefillFloorUs: 3.898, PrefillCTAUs: 2.028, PrefillCTAUsFP8: 2.080, PrefillIterUs: 0.8377, PrefillIterUsFP8: 0.7500, PrefillDimExp: 0.2694, PrefillDimExpWide: 0.8140, PrefillTail: 1.404,
	PrefillTokenKVNs: 0.1672, PrefillTokenKVNsFP8: 0.5785,
}

// decodeUs is the kernel time, in microseconds, of decode attention o for
// x = (batch, cached tokens) on sms SMs with hbmGBps of HBM bandwidth;
// warm: the layer's KV is still in the L2 from the replay before.
func (a *TRTLLMAttn) decodeUs(o *spec.Op, x []float64, sms int, hbmGBps float64, warm bool) float64 {
	return a.decodeQUs(o, x, 1, sms, hbmGBps, warm)
}

// trtllmDecodeMaxQ is the most query tokens a sequence priced as a
// decode: vLLM's FlashInfer backend classes a request of one token a
// decode (reorder_batch_threshold 1), and with speculative decoding of K
// draft tokens one of up to 1 + K, which the TRT-LLM decode kernel runs
// with the tokens' query rows packed with the group's
// (vllm/v1/attention/backends/flashinfer.py; vllm/utils/flashinfer.py,
// use_trtllm_attention: has_spec). A short chunk of a plain prefill runs
// the prefill kernel in vLLM; it is priced as a decode here too (a
// stated approximation: the prefill terms are not fitted on chunks over
// a cached prefix).
const trtllmDecodeMaxQ = 8

// decodeQUs is decodeUs for q query tokens a sequence, packed with the
// group's query heads in the sequence's CTAs.
func (a *TRTLLMAttn) decodeQUs(o *spec.Op, x []float64, q float64, sms int, hbmGBps float64, warm bool) float64 {
	b, kvLen := math.Max(x[0], 1), math.Max(x[1], 0)+1
	_, bytes := o.Work(x)
	memUs := a.MemLatencyUs + bytes/(hbmGBps*1e3*a.MemEff)
	if warm && bytes <= a.WarmKVMB*1e6 && a.L2GBps > 0 {
		memUs = bytes / (a.L2GBps * 1e3)
	}
	kvHeads := float64(max(o.KVHeads, 1))
	group := float64(max(o.QHeads/max(o.KVHeads, 1), 1)) * math.Max(q, 1)
	ctas := b * kvHeads
	n := float64(sms)
	splits := 1.0
	if ctas < n {
		splits = math.Max(1, math.Min(math.Min(math.Floor(n/ctas), a.MaxSplits), math.Ceil(kvLen/trtllmKVStep)))
	}
	blocks := math.Ceil(kvLen / splits / trtllmKVStep)
	cta := a.CTAUs + a.CTADimUs*float64(o.HeadDim)/128
	switch {
	case group > 16:
		cta *= 1 + 2*a.GroupCost
	case group > 8:
		cta *= 1 + a.GroupCost
	}
	if o.ElemBytes == 1 {
		cta *= a.FP8CTAScale
	}
	ctaUs := (cta + blocks*a.IterUs) * math.Max(1, ctas*splits/n)
	return a.DecodeFloorUs + math.Max(memUs, ctaUs)
}

// prefillUs is the kernel time, in microseconds, of the causal prefill o
// for x = (context, chunk[, sequences]); ok false: not priced here.
func (a *TRTLLMAttn) prefillUs(o *spec.Op, x []float64, sms int, hbmGBps float64, warm bool) (us float64, ok bool) {
	seqs, q, ctx := prefillShape(x) // fa3.go
	if q <= trtllmDecodeMaxQ {
		// Few query tokens a sequence: the decode kernel (above).
		d := *o
		d.Name = spec.OpAttnDecode
		return a.decodeQUs(&d, []float64{seqs, ctx + q - 1}, q, sms, hbmGBps, warm), true
	}
	heads := float64(max(o.QHeads, 1))
	tiles := math.Ceil(q / trtllmKVStep)
	blocks := fa3CausalBlocks(tiles, q, ctx, 1, 128, 128) // 128-token tiles over 128-key blocks
	cta, iter := a.PrefillCTAUs, a.PrefillIterUs
	if o.ElemBytes == 1 {
		cta, iter = a.PrefillCTAUsFP8, a.PrefillIterUsFP8
	}
	if hd := float64(o.HeadDim) / 128; hd > 1 {
		iter *= math.Pow(hd, a.PrefillDimExpWide)
	} else {
		iter *= math.Pow(hd, a.PrefillDimExp)
	}
	longest := math.Ceil((ctx+q)/trtllmKVStep)*iter + cta
	tokKV := a.PrefillTokenKVNs
	if o.ElemBytes == 1 {
		tokKV = a.PrefillTokenKVNsFP8
	}
	tokenUs := seqs * q * float64(max(o.KVHeads, 1)) * tokKV / 1e3
	computeUs := seqs*heads*(tiles*cta+blocks*iter)/float64(sms) + a.PrefillTail*longest + tokenUs
	_, bytes := o.Work([]float64{ctx, q})
	memUs := a.MemLatencyUs + seqs*bytes/(hbmGBps*1e3*a.MemEff)
	return a.PrefillFloorUs + math.Max(computeUs, memUs), true
}
