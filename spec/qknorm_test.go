package spec

import "testing"

// The QKV projection of a Q/K-norm model carries its heads and is priced
// as one GEMM plus the norms (and, from 2 tokens, their input copies) at
// their own classes; other models' projections keep one GEMM kernel.
func TestQKNormPricedByItsKernels(t *testing.T) {
	d, err := LookupDevice("h800")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d}
	for _, tc := range []struct {
		model              string
		tp                 int
		qkNorm             bool
		minStepUs, maxStep float64 // 1 -> 2 tokens
	}{
		// Two copy kernels between 1 and 2 tokens (the H800 profile:
		// 9.1 -> 14.0 us at TP8, KERNEL_ONLY).
		{"qwen3-30b-a3b-tiny", 8, true, 2 * d.Curves.Class[ClassCopy].FloorUs, 6},
		{"qwen3-30b-a3b", 4, true, 2 * d.Curves.Class[ClassCopy].FloorUs, 6},
		// Without Q/K norms the projection barely moves.
		{"llama-3.1-8b", 1, false, 0, 0.1},
	} {
		m, err := LookupModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		qkv, ok := findOp(LayerOps(m, Layout{TP: tc.tp}.Normalize(), 0), OpAttnPreProj)
		if !ok {
			t.Fatalf("%s: no %s", tc.model, OpAttnPreProj)
		}
		if qkv.qkNorm() != tc.qkNorm {
			t.Errorf("%s: qkNorm %v, want %v (heads %d/%d, head dim %d)", tc.model, qkv.qkNorm(), tc.qkNorm, qkv.QHeads, qkv.KVHeads, qkv.HeadDim)
		}
		one, two := r.KernelMs(&qkv, []float64{1})*1e3, r.KernelMs(&qkv, []float64{2})*1e3
		if step := two - one; step < tc.minStepUs || step > tc.maxStep {
			t.Errorf("%s TP%d: QKV %.2f us at 1 token, %.2f at 2: step %.2f us, want %.2f-%.2f", tc.model, tc.tp, one, two, step, tc.minStepUs, tc.maxStep)
		}
	}
}

// Compiled by vLLM (Inductor, every mode but --enforce-eager) the Q/K
// norms read their strided inputs directly: the QKV projection of a
// Q/K-norm model costs the two copy kernels less from 2 tokens on, the
// same at 1 token, and a model without Q/K norms costs the same.
func TestCompiledQKNormRunsNoCopies(t *testing.T) {
	d, err := LookupDevice("rtx4090d")
	if err != nil {
		t.Fatal(err)
	}
	eager, compiled := Roofline{Device: d}, Roofline{Device: d, Compiled: true}
	for _, tc := range []struct {
		model  string
		qkNorm bool
	}{{"qwen3-30b-a3b", true}, {"llama-3.1-8b", false}} {
		m, err := LookupModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		qkv, ok := findOp(LayerOps(m, Layout{TP: 4}.Normalize(), 0), OpAttnPreProj)
		if !ok {
			t.Fatalf("%s: no %s", tc.model, OpAttnPreProj)
		}
		for _, tokens := range []float64{1, 8, 2048} {
			x := []float64{tokens}
			e, c := eager.KernelMs(&qkv, x)*1e3, compiled.KernelMs(&qkv, x)*1e3
			var copiesUs float64
			if tc.qkNorm && tokens >= 2 {
				for _, heads := range []int{qkv.QHeads, qkv.KVHeads} {
					cp := Op{Name: OpAttnInputReshape, Family: FamilyAttention, Kernels: 1, QHeads: heads, HeadDim: qkv.HeadDim, ElemBytes: qkv.ElemBytes}
					copiesUs += eager.KernelMs(&cp, x) * 1e3
				}
			}
			if got := e - c; got < copiesUs-1e-6 || got > copiesUs+1e-6 {
				t.Errorf("%s at %.0f tokens: eager %.2f us, compiled %.2f us: saves %.2f us, want the copies' %.2f", tc.model, tokens, e, c, got, copiesUs)
			}
		}
	}
}
