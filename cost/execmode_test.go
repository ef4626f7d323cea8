package cost

import (
	"testing"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

func TestCaptureSizes(t *testing.T) {
	for _, tc := range []struct{ max, n, want int }{
		{512, 1, 1}, {512, 2, 2}, {512, 3, 4}, {512, 4, 4}, {512, 5, 8}, {512, 9, 16}, {512, 512, 512}, {512, 513, 0},
		{64, 60, 64}, {60, 57, 0}, {60, 56, 56}, {3, 3, 0}, {3, 2, 2}, {6, 5, 0}, {6, 4, 4},
	} {
		if got := (captureSizes{max: tc.max}).pad(tc.n); got != tc.want {
			t.Errorf("max %d: batch %d pads to %d, want %d", tc.max, tc.n, got, tc.want)
		}
	}
}

// CUDA_EVENT op times include eager launch gaps: a run with them is eager
// by default and refuses a CUDA graph mode.
func TestExecutionModeFollowsMeasurement(t *testing.T) {
	for _, tc := range []struct {
		asked, measurement, want string
		fails                    bool
	}{
		{"", spec.KernelOnly, runresult.ExecCUDAGraph, false},
		{"", spec.CUDAEvent, runresult.ExecEager, false},
		{runresult.ExecEager, spec.CUDAEvent, runresult.ExecEager, false},
		{runresult.ExecCUDAGraph, spec.CUDAEvent, "", true},
		{runresult.ExecPiecewise, spec.CUDAEvent, "", true},
		{runresult.ExecPiecewise, spec.KernelOnly, runresult.ExecPiecewise, false},
	} {
		got, err := resolveExecutionMode(tc.asked, tc.measurement)
		if got != tc.want || (err != nil) != tc.fails {
			t.Errorf("%q with %s: %q, %v", tc.asked, tc.measurement, got, err)
		}
	}
}

// vLLM compiles the model unless it runs eager (Inductor generates the
// custom ops' kernels): a Qwen3 decode step of 8 sequences then runs no
// copies before its Q/K norms and one combo kernel for both norms (vLLM
// PR #26682), so in either graph mode its linear part costs each layer's
// two copies and one norm kernel less than eager; everything else is
// priced alike.
func TestCompiledModesRunQKNormAsOneKernel(t *testing.T) {
	d, err := spec.LookupDevice("rtx4090d")
	if err != nil {
		t.Fatal(err)
	}
	m, err := spec.LookupModel("qwen3-30b-a3b")
	if err != nil {
		t.Fatal(err)
	}
	l := spec.Layout{TP: 4}
	b := BatchShape{Tokens: 8, Seqs: 8}
	for i := 0; i < 8; i++ {
		b.DecodeContexts = append(b.DecodeContexts, 4000)
	}
	step := func(mode string) StepCost {
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: l, Device: d, Limits: testLimits, MoE: runresult.MoEConfig{Routing: runresult.RoutingEven}, ExecutionMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		var c StepCost
		cm.StageCost(&b, 0, &c)
		return c
	}
	qkv, ok := findLayerOp(spec.LayerOps(m, l.Normalize(), 0), spec.OpAttnPreProj)
	if !ok {
		t.Fatal("no QKV projection")
	}
	r := roofline.Roofline{Device: roofline.NewDevice(d)}
	norm := func(rows int) float64 {
		o := spec.Op{Name: spec.OpInputLayernorm, Family: spec.FamilyLinear, Kernels: 1, Width: qkv.HeadDim, ElemBytes: qkv.ElemBytes}
		return r.KernelMs(&o, []float64{float64(8 * rows)})
	}
	savedMs := norm(qkv.QHeads) + norm(qkv.KVHeads) - norm(qkv.QHeads+qkv.KVHeads)
	for _, heads := range []int{qkv.QHeads, qkv.KVHeads} {
		cp := spec.Op{Name: spec.OpAttnInputReshape, Family: spec.FamilyAttention, Kernels: 1, QHeads: heads, HeadDim: qkv.HeadDim, ElemBytes: qkv.ElemBytes}
		savedMs += r.KernelMs(&cp, []float64{8})
	}
	want := float64(m.NumLayers) * savedMs
	eager := step(runresult.ExecEager)
	for _, mode := range []string{runresult.ExecCUDAGraph, runresult.ExecPiecewise} {
		c := step(mode)
		if got := eager.Ms[CompLinear] - c.Ms[CompLinear]; got < want*0.999 || got > want*1.001 {
			t.Errorf("%s: linear %.3f ms vs eager %.3f: %.3f ms less, want the %d layers' copies and one norm, %.3f ms", mode, c.Ms[CompLinear], eager.Ms[CompLinear], got, m.NumLayers, want)
		}
		for _, comp := range []Component{CompAttention, CompMoE, CompTPComm} {
			if c.Ms[comp] != eager.Ms[comp] {
				t.Errorf("%s: component %d %.4f ms, eager %.4f", mode, comp, c.Ms[comp], eager.Ms[comp])
			}
		}
	}
}

func findLayerOp(ops []spec.Op, name string) (spec.Op, bool) {
	for _, o := range ops {
		if o.Name == name {
			return o, true
		}
	}
	return spec.Op{}, false
}

// FULL_AND_PIECEWISE (vLLM's default since v0.11.0) prices a decode-only
// batch as a full CUDA graph replay and a batch with a prefill as
// piecewise graphs: each step equals the mode it takes from.
func TestFullAndPiecewiseTakesEachBatchsGraph(t *testing.T) {
	d, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	m, err := spec.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	decode := BatchShape{Tokens: 8, Seqs: 8}
	for i := 0; i < 8; i++ {
		decode.DecodeContexts = append(decode.DecodeContexts, 2000)
	}
	mixed := BatchShape{Tokens: 200, Seqs: 9, PrefillChunks: []int{192}, PrefillContexts: []int{0}, DecodeContexts: decode.DecodeContexts}
	step := func(mode string, b *BatchShape) StepCost {
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: spec.Layout{TP: 1}, Device: d, Limits: testLimits, ExecutionMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		var c StepCost
		cm.StageCost(b, 0, &c)
		return c
	}
	for _, tc := range []struct {
		b    *BatchShape
		like string
	}{{&decode, runresult.ExecCUDAGraph}, {&mixed, runresult.ExecPiecewise}} {
		got, want := step(runresult.ExecFullAndPiecewise, tc.b), step(tc.like, tc.b)
		if got.TotalMs() != want.TotalMs() || !got.Graph {
			t.Errorf("batch of %d tokens: %.4f ms (graph %v), want %s's %.4f ms", tc.b.Tokens, got.TotalMs(), got.Graph, tc.like, want.TotalMs())
		}
	}
	if a, b := step(runresult.ExecCUDAGraph, &mixed), step(runresult.ExecFullAndPiecewise, &mixed); a.TotalMs() == b.TotalMs() {
		t.Errorf("a mixed batch costs the same under cuda-graph (eager) and full-and-piecewise (%.4f ms)", a.TotalMs())
	}
}
