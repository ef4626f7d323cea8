package roofline

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// A non-gated layer (Nemotron-H's relu2) streams two of the three
// projections a gated one does: where the weight stream sets the time (a
// decode of a few tokens over many experts), it takes about two thirds
// of the gated layer's time, and never more.
func TestTritonMoENonGated(t *testing.T) {
	d, err := LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d, Kernels: KernelsFor(d.Arch, "0.24.0")}
	gated := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: 2688, ExpertWidth: 1856,
		LocalExperts: 128, Experts: 128, TopK: 6, ElemBytes: 2}
	plain := gated
	plain.NonGatedExperts = true
	for _, tokens := range []float64{1, 8, 64, 4096} {
		x := []float64{tokens * 6, 0, 0, tokens}
		g, p := r.KernelMs(&gated, x), r.KernelMs(&plain, x)
		if p >= g {
			t.Errorf("%.0f tokens: non-gated %.4f ms, gated %.4f ms", tokens, p, g)
		}
		if tokens == 64 && (p/g < 0.6 || p/g > 0.8) {
			t.Errorf("64 tokens (all 128 experts' weights streamed): non-gated/gated %.2f, want about 2/3", p/g)
		}
	}
}
