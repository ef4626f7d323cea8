package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// On the B200 a prefill of a few query tokens a sequence over a long
// cached prefix (a speculative verify pass, a one-token chunk) runs
// FlashInfer's TRT-LLM decode kernel, whose grid splits the keys over the
// SMs: its attention is priced within x1-1.5 of the one-token decode of
// the same contexts, not as one CTA a head walking the whole prefix.
func TestTRTLLMShortPrefillIsADecode(t *testing.T) {
	d, err := LookupDevice("b200")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d, Compiled: true}
	if r.trtllm() == nil {
		t.Fatal("b200: no TRT-LLM attention terms")
	}
	for _, tc := range []struct {
		seqs, q, ctx float64
	}{{1, 1, 100000}, {1, 4, 100000}, {8, 4, 30000}, {64, 2, 2000}} {
		pre := spec.Op{Name: spec.OpAttnPrefill, Family: spec.FamilyAttention, Kernels: 1, QHeads: 32, KVHeads: 8, HeadDim: 128, ElemBytes: 2}
		dec := pre
		dec.Name = spec.OpAttnDecode
		// spec.PrefillEquivalent of seqs equal chunks: chunk q x
		// sqrt(seqs) over context ctx x sqrt(seqs).
		rt := math.Sqrt(tc.seqs)
		p := r.KernelMs(&pre, []float64{tc.ctx * rt, tc.q * rt, tc.seqs})
		dm := r.KernelMs(&dec, []float64{tc.seqs, tc.ctx})
		t.Logf("%g sequences of %g tokens over %g: prefill %.4f ms, decode %.4f ms (x%.2f)", tc.seqs, tc.q, tc.ctx, p, dm, p/dm)
		if p < dm || p > 1.5*dm {
			t.Errorf("%g sequences of %g tokens over %g cached: prefill %.4f ms, x%.2f the decode's %.4f ms; want x1-1.5", tc.seqs, tc.q, tc.ctx, p, p/dm, dm)
		}
	}
}
