package roofline

import (
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

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
		m, err := spec.LookupModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		qkv, ok := findOp(spec.LayerOps(m, spec.Layout{TP: tc.tp}.Normalize(), 0), spec.OpAttnPreProj)
		if !ok {
			t.Fatalf("%s: no %s", tc.model, spec.OpAttnPreProj)
		}
		if qkNorm(&qkv) != tc.qkNorm {
			t.Errorf("%s: qkNorm %v, want %v (heads %d/%d, head dim %d)", tc.model, qkNorm(&qkv), tc.qkNorm, qkv.QHeads, qkv.KVHeads, qkv.HeadDim)
		}
		one, two := r.KernelMs(&qkv, []float64{1})*1e3, r.KernelMs(&qkv, []float64{2})*1e3
		if step := two - one; step < tc.minStepUs || step > tc.maxStep {
			t.Errorf("%s TP%d: QKV %.2f us at 1 token, %.2f at 2: step %.2f us, want %.2f-%.2f", tc.model, tc.tp, one, two, step, tc.minStepUs, tc.maxStep)
		}
	}
}

// Compiled by vLLM (Inductor, every mode but --enforce-eager) the Q/K
// norms read their strided inputs directly and run as one combo kernel:
// the QKV projection of a Q/K-norm model saves the two copy kernels (from
// 2 tokens on) and one norm kernel's floor, as vLLM PR #26682's trace
// shows (5 kernels after the projection become 2, the rotary embedding
// being the other); a model without Q/K norms costs the same.
func TestCompiledQKNormRunsOneKernel(t *testing.T) {
	d, err := LookupDevice("rtx4090d")
	if err != nil {
		t.Fatal(err)
	}
	eager, compiled := Roofline{Device: d}, Roofline{Device: d, Compiled: true}
	for _, tc := range []struct {
		model  string
		qkNorm bool
	}{{"qwen3-30b-a3b", true}, {"llama-3.1-8b", false}} {
		m, err := spec.LookupModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		qkv, ok := findOp(spec.LayerOps(m, spec.Layout{TP: 4}.Normalize(), 0), spec.OpAttnPreProj)
		if !ok {
			t.Fatalf("%s: no %s", tc.model, spec.OpAttnPreProj)
		}
		for _, tokens := range []float64{1, 8, 2048} {
			x := []float64{tokens}
			e, c := eager.KernelMs(&qkv, x)*1e3, compiled.KernelMs(&qkv, x)*1e3
			var savedUs float64
			if tc.qkNorm {
				savedUs = compiledQKNormSavingUs(eager, &qkv, tokens)
				if savedUs <= 0 {
					t.Errorf("%s at %.0f tokens: compiled Q/K norms save %.2f us", tc.model, tokens, savedUs)
				}
			}
			if got := e - c; got < savedUs-1e-6 || got > savedUs+1e-6 {
				t.Errorf("%s at %.0f tokens: eager %.2f us, compiled %.2f us: saves %.2f us, want %.2f", tc.model, tokens, e, c, got, savedUs)
			}
		}
	}
}

// compiledQKNormSavingUs is what compiling saves on the Q/K norms of qkv
// at tokens: the two copies (from 2 tokens on), and the q and k norms
// less one norm kernel over both heads' rows.
func compiledQKNormSavingUs(r Roofline, qkv *spec.Op, tokens float64) float64 {
	norm := func(rows float64) float64 {
		o := spec.Op{Name: spec.OpInputLayernorm, Family: spec.FamilyLinear, Kernels: 1, Width: qkv.HeadDim, ElemBytes: qkv.ElemBytes}
		return r.KernelMs(&o, []float64{rows}) * 1e3
	}
	us := norm(tokens*float64(qkv.QHeads)) + norm(tokens*float64(qkv.KVHeads)) - norm(tokens*float64(qkv.QHeads+qkv.KVHeads))
	if tokens >= 2 {
		for _, heads := range []int{qkv.QHeads, qkv.KVHeads} {
			cp := spec.Op{Name: spec.OpAttnInputReshape, Family: spec.FamilyAttention, Kernels: 1, QHeads: heads, HeadDim: qkv.HeadDim, ElemBytes: qkv.ElemBytes}
			us += r.KernelMs(&cp, []float64{tokens}) * 1e3
		}
	}
	return us
}

// The A800's kernel-traced QKV projections from 1,024 tokens (TP2 and TP4,
// 8-72 thousand head rows) are mostly Q/K norm: priced with the norm's
// per-row time (Curve.RowUs) they are within 8% on average; with the norm
// and copy classes' bandwidth alone they were 19% under.
func TestAmpereQKNormRows(t *testing.T) {
	d, err := LookupDevice("a800")
	if err != nil {
		t.Fatal(err)
	}
	mape, n := rowsMAPE(t, d, func(p realPoint) bool {
		return strings.Contains(p.profile, "a800") && p.meas == spec.KernelOnly && p.op.Name == spec.OpAttnPreProj && p.x[0] >= 1024
	}, nil)
	if n < 200 {
		t.Fatalf("%d A800 kernel-traced QKV rows from 1,024 tokens, want the file's 258", n)
	}
	if mape > 8 {
		t.Errorf("A800 kernel-traced QKV projections from 1,024 tokens: MAPE %.1f%%, want <= 8%%", mape)
	}
}
