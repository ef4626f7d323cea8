package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// TritonAttn prices attention as vLLM's TRITON_ATTN backend runs it
// (vllm/v1/attention/ops/triton_unified_attention.py, unified_attention):
// the backend vLLM 0.24.0 picks on a B200 for a head dim FlashInfer's
// TRT-LLM kernels lack (192) with an FP8 KV cache (AIConfigurator's B200
// rows, kernel source vllm_triton_attn). One kernel serves prefill and
// decode:
//   - a 2D grid of programs, one a block of query rows (16 rows of query
//     tokens x the query heads of a KV head) and KV head, each scanning
//     its keys to its causal end, when the batch has a prefill or more
//     than 128 programs (the rows switch at 128 sequences x KV heads);
//   - else a 3D grid that splits each program's keys over 16 segments,
//     plus a kernel reducing the segments (ReduceUs).
//
// A program costs CTAUs plus KeyNs a key it scans (PrefillKeyNs in a
// prefill), the programs spread over the SMs, and a grid takes at least
// its longest program; the keys every program
// reads also pass at AggGBps (the kernel's aggregate rate: the rows never
// pass 1.6 TB/s of FP8 KV), over a floor. Fitted on the B200 rows:
// TestTritonAttentionRefit (cost/tritonattn_test.go).
type TritonAttn struct {
	FloorUs, CTAUs, KeyNs, PrefillKeyNs float64
	ReduceUs, AggGBps                   float64
}

// tritonBlockRows is the query rows a program holds (BLOCK_M), tritonSegments
// the 3D grid's key segments and tritonMax2D the program count at or under
// which a decode batch takes the 3D grid.
const (
	tritonBlockRows = 16
	tritonSegments  = 16
	tritonMax2D     = 128
)

// blackwellTriton is TritonAttn fitted on AIConfigurator's vLLM 0.24.0 B200
// SXM rows of vllm_triton_attn (head dim 192, FP8 KV):
// TestTritonAttentionRefit.
var blackwellTriton = TritonAttn{FloorUs: 5.385, CTAUs: 1.348, KeyNs: 38, PrefillKeyNs: 29.04, ReduceUs: 1.981}

// decodeUs is the kernel time, in microseconds, of decode attention o for
// x = (batch, cached tokens) on sms SMs.
func (a *TritonAttn) decodeUs(o *spec.Op, x []float64, sms int) float64 {
	b, keys := math.Max(x[0], 1), math.Max(x[1], 0)+1
	kvHeads := float64(max(o.KVHeads, 1))
	programs := b * kvHeads
	segs, reduce := 1.0, 0.0
	if programs <= tritonMax2D {
		segs, reduce = tritonSegments, a.ReduceUs // every segment launched, short keys or not
	}
	ctas := programs * segs
	ctaUs := (a.CTAUs + keys/segs*a.KeyNs/1e3) * math.Max(1, ctas/float64(sms))
	return a.FloorUs + reduce + ctaUs
}

// prefillUs is the kernel time, in microseconds, of the causal prefill o
// for x = (context, chunk[, sequences]) on sms SMs.
func (a *TritonAttn) prefillUs(o *spec.Op, x []float64, sms int) float64 {
	seqs, q, ctx := prefillShape(x) // fa3.go
	if q <= 1 {
		d := *o
		d.Name = spec.OpAttnDecode
		return a.decodeUs(&d, []float64{seqs, ctx}, sms)
	}
	kvHeads := float64(max(o.KVHeads, 1))
	group := float64(max(o.QHeads/max(o.KVHeads, 1), 1))
	rows := math.Max(math.Floor(tritonBlockRows/group), 1) // query tokens a program (BLOCK_Q)
	blocks := math.Ceil(q / rows)
	// Keys the blocks scan: each to the causal end of its last token.
	inner := math.Min(math.Floor(q/rows), blocks)
	keys := ctx*blocks + rows*inner*(inner+1)/2 + (blocks-inner)*(ctx+q)
	programs := seqs * kvHeads * blocks
	ctaUs := (programs*a.CTAUs + seqs*kvHeads*keys*a.PrefillKeyNs/1e3) / float64(sms)
	// The last block of a sequence scans the most keys: no grid ends before it.
	ctaUs = math.Max(ctaUs, a.CTAUs+(ctx+q)*a.PrefillKeyNs/1e3)
	return a.FloorUs + ctaUs
}
