package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// layerIssue sums IssueOf over layer i's ops.
func layerIssue(m *spec.Model, l spec.Layout, i int) spec.OpIssue {
	var t spec.OpIssue
	for _, o := range spec.LayerOps(m, l, i) {
		is := IssueOf(m, l, &o)
		t.Modules += is.Modules
		t.Calls += is.Calls
		for k, n := range is.Kernels {
			t.Kernels[k] += n
		}
	}
	return t
}

// TestIssueInventory checks the per-layer inventory against counts read
// from vLLM's source (roofline/issue.go names the files and functions).
func TestIssueInventory(t *testing.T) {
	cases := []struct {
		model  string
		layout spec.Layout
		layer  int
		want   [spec.NumKernelKinds]int
	}{
		// Llama: 2 norms, rotary, silu_and_mul, reshape_and_cache (custom);
		// qkv, o, gate_up, down (ATen); one attention call.
		{"llama-3.1-8b", spec.Layout{TP: 1}, 0, [spec.NumKernelKinds]int{spec.KernelATen: 4, spec.KernelCustom: 5, spec.KernelAttention: 1}},
		// TP2 adds the two all-reduces.
		{"llama-3.1-8b", spec.Layout{TP: 2}, 0, [spec.NumKernelKinds]int{spec.KernelATen: 4, spec.KernelCustom: 5, spec.KernelAttention: 1, spec.KernelCollective: 2}},
		// Qwen3-MoE: q/k norms and rotary, topk_softmax, align, silu_and_mul,
		// moe_sum; router GEMM and renormalize; two fused_moe_kernel launches.
		{"qwen3-30b-a3b", spec.Layout{TP: 4}, 10, [spec.NumKernelKinds]int{spec.KernelATen: 5, spec.KernelCustom: 10, spec.KernelTriton: 2, spec.KernelAttention: 1, spec.KernelCollective: 2}},
		// Mixtral: the same MoE path without q/k norms.
		{"mixtral-8x7b", spec.Layout{TP: 1}, 3, [spec.NumKernelKinds]int{spec.KernelATen: 5, spec.KernelCustom: 8, spec.KernelTriton: 2, spec.KernelAttention: 1}},
		// DeepSeek-V3 MoE layer: grouped_topk in plain torch dominates ATen.
		// At DP=1 vLLM exchanges no tokens (spec.MoEExchanges): the two
		// collectives are the TP all-reduces after attention and experts.
		{"deepseek-v3", spec.Layout{TP: 8, EP: 8}, 10, [spec.NumKernelKinds]int{spec.KernelATen: 25, spec.KernelCustom: 10, spec.KernelTriton: 2, spec.KernelAttention: 1, spec.KernelCollective: 2}},
		// With data parallelism dispatch and combine replace the second.
		{"deepseek-v3", spec.Layout{TP: 1, EP: 8, DP: 8}, 10, [spec.NumKernelKinds]int{spec.KernelATen: 25, spec.KernelCustom: 10, spec.KernelTriton: 2, spec.KernelAttention: 1, spec.KernelCollective: 2}},
	}
	for _, c := range cases {
		m, err := spec.LookupModel(c.model)
		if err != nil {
			t.Fatal(err)
		}
		got := layerIssue(m, c.layout, c.layer)
		if got.Kernels != c.want {
			t.Errorf("%s %s layer %d: kernels by kind %v, want %v", c.model, c.layout, c.layer, got.Kernels, c.want)
		}
		// vLLM issues more kernels than the catalog's GPU view counts for
		// MoE layers (top-k, align, sum): never fewer than one per op.
		if got.KernelCount() < len(spec.LayerOps(m, c.layout, c.layer))-3 {
			t.Errorf("%s: %d kernels for %d ops", c.model, got.KernelCount(), len(spec.LayerOps(m, c.layout, c.layer)))
		}
	}
}

// Every op of every catalog model has an inventory entry (none falls back
// to the catalog's kernel count).
func TestIssueCoversEveryOp(t *testing.T) {
	for _, name := range spec.ModelNames() {
		m, _ := spec.LookupModel(name)
		for _, l := range []spec.Layout{{TP: 1}, {TP: 2, EP: 2}} {
			if m.NumHeads%l.TP != 0 || (l.EP > 1 && (!m.IsMoE() || m.NumExperts%l.EP != 0)) {
				continue
			}
			ops := spec.LayerOps(m, l, m.NumLayers-1)
			first, last, between := spec.ModelOps(m, l)
			ops = append(append(ops, first...), last...)
			if between != nil {
				ops = append(ops, *between)
			}
			for _, o := range ops {
				is := IssueOf(m, l, &o)
				if is.Modules+is.Calls+is.KernelCount() == 0 && o.Name != spec.OpAttnPrefill && o.Name != spec.OpAttnDecode {
					t.Errorf("%s %s: op %s issues nothing", name, l, o.Name)
				}
			}
		}
	}
}

func TestIssueCosts(t *testing.T) {
	h100, _ := spec.LookupDevice("h100")
	a100, _ := spec.LookupDevice("a100")
	ch, ca := DefaultIssueCosts(h100), DefaultIssueCosts(a100)
	is := spec.OpIssue{Modules: 2, Calls: 1, Kernels: [spec.NumKernelKinds]int{spec.KernelTriton: 2}}
	want := (2*defaultIssueCosts.ModuleUs + defaultIssueCosts.CallUs + 2*defaultIssueCosts.KernelUs[spec.KernelTriton]) * IssueScale
	if got := ch.OpUs(is); math.Abs(got-want) > 1e-9 {
		t.Errorf("h100 op cost %g us, want %g", got, want)
	}
	if r := ca.OpUs(is) / ch.OpUs(is); math.Abs(r-a100.HostCPUFactor) > 1e-9 {
		t.Errorf("a100/h100 issue cost ratio %g, want the host CPU factor %g", r, a100.HostCPUFactor)
	}
	if ch.Source == "" || ch.Describe() == "" {
		t.Error("issue costs must say where they come from")
	}
}
