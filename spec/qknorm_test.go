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
