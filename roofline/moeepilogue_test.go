package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// TestFusedMoEEpilogueRunsAfterTheGEMMs checks that the SiLU-and-mul and
// moe_sum kernels of vLLM's fused-MoE layer are priced after the grouped
// GEMMs, on their own curves, over every row of the rank's caches: at a
// prefill-sized batch of Qwen3-30B-A3B (128 experts of 2,048 x 768, top-8)
// the two GEMMs are compute-bound, and the 0.6 GB the activation and the
// sum move a layer at 8,192 tokens must add to their time, not hide under
// it. With expert parallelism the activation still covers M x top-k rows
// (the GEMMs write zeros for other ranks' experts), so the epilogue of a
// batch is the same at EP1 and EP8 while the GEMMs shrink.
func TestFusedMoEEpilogueRunsAfterTheGEMMs(t *testing.T) {
	h100, err := LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: h100}
	for _, tc := range []struct {
		name        string
		ep          int
		tokens      float64
		minEpilogue float64 // us: bytes at full HBM bandwidth, the least it can take
		maxEpilogue float64 // us: the same at a quarter of it
	}{
		// 8,192 tokens: activation 3 x 2 B x 65,536 rows x 768, sum
		// 2 B x 8,192 x 2,048 x 9: 0.60 GB; 3.35 TB/s: 181 us.
		{"8,192 tokens, EP1", 1, 8192, 181, 4 * 181},
		{"8,192 tokens, EP8", 8, 8192, 181, 4 * 181},
		// 2,048 tokens: a quarter of the bytes (45 us), plus two floors.
		{"2,048 tokens, EP1", 1, 2048, 45, 4 * 45},
	} {
		o := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: 2048, ExpertWidth: 768,
			LocalExperts: 128 / tc.ep, Experts: 128, TopK: 8, ElemBytes: 2}
		routed := tc.tokens * 8 / float64(tc.ep)
		x := []float64{routed, math.Ceil(routed / float64(o.LocalExperts)), float64(o.LocalExperts), tc.tokens}
		epi := r.fusedMoEEpilogueUs(&o, x)
		if epi < tc.minEpilogue || epi > tc.maxEpilogue {
			t.Errorf("%s: activation and sum %.1f us, want %.0f-%.0f us", tc.name, epi, tc.minEpilogue, tc.maxEpilogue)
		}
		total := r.KernelMs(&o, x) * 1e3
		flops, _ := o.Work(x)
		gemmAtPeakUs := flops / (h100.PeakTFLOPS(false) * 1e12) * 1e6
		if total < gemmAtPeakUs+epi {
			t.Errorf("%s: grouped GEMM op %.1f us, under the GEMMs at peak (%.1f us) plus activation and sum (%.1f us)", tc.name, total, gemmAtPeakUs, epi)
		}
		t.Logf("%s: op %.1f us, of which activation and sum %.1f us", tc.name, total, epi)
	}
	cutlass := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: 2048, ExpertWidth: 768,
		LocalExperts: 128, Experts: 128, TopK: 8, ElemBytes: 1, FP8: true, CutlassMoE: true}
	if got := r.fusedMoEEpilogueUs(&cutlass, []float64{8192, 64}); got != 0 {
		t.Errorf("CUTLASS MoE: epilogue %.1f us, want 0 (not the Triton path)", got)
	}
}
