package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestEPExchangeBackends(t *testing.T) {
	d, _ := LookupDevice("h100")
	r := Roofline{Device: d}
	m, _ := spec.LookupModel("qwen3-30b-a3b")
	op := func(name, backend string, workers, dp int) *spec.Op {
		return &spec.Op{Name: name, Family: spec.FamilyCollective, Kernels: 1, Width: m.HiddenSize, Workers: workers, DPRanks: dp, Backend: backend, ElemBytes: 2}
	}
	// A DP8 x EP8 decode step of 64 tokens a rank, evenly routed.
	x := spec.EPExchange{DP: 8, Ranks: 8, GroupTokens: 8 * 64, RecvCopies: 8 * 64 * m.TopK / 8, Hidden: m.HiddenSize, Experts: m.NumExperts}
	us := map[string][2]float64{}
	for _, b := range spec.All2AllBackends() {
		x.Backend = b
		disp := r.KernelMs(op(spec.OpEPDispatch, b, 8, 8), []float64{x.DispatchBytes()}) * 1e3
		comb := r.KernelMs(op(spec.OpEPCombine, b, 8, 8), []float64{x.CombineBytes()}) * 1e3
		if !(disp > 0 && comb > 0) || math.IsInf(disp+comb, 0) {
			t.Fatalf("%s: dispatch %g us, combine %g us", b, disp, comb)
		}
		us[b] = [2]float64{disp, comb}
	}
	// The naive dispatch pays one broadcast latency per DP rank, the
	// all-gather one: naive is slower at a small step.
	if us[spec.All2AllNaive][0] <= us[spec.All2AllAllgatherRS][0] {
		t.Errorf("naive dispatch %.1f us not slower than allgather %.1f us", us[spec.All2AllNaive][0], us[spec.All2AllAllgatherRS][0])
	}
	// The naive combine all-reduces the whole buffer: twice the traffic of
	// a reduce-scatter.
	if us[spec.All2AllNaive][1] <= us[spec.All2AllAllgatherRS][1] {
		t.Errorf("naive combine %.1f us not slower than reduce-scatter %.1f us", us[spec.All2AllNaive][1], us[spec.All2AllAllgatherRS][1])
	}
	// DeepEP high-throughput dispatch carries its host sync.
	if us[spec.All2AllDeepEPHT][0] < deepEPHostSyncUs {
		t.Errorf("DeepEP HT dispatch %.1f us lacks the %d us host sync", us[spec.All2AllDeepEPHT][0], deepEPHostSyncUs)
	}
	// DeepEP low latency reproduces its README figure: 128 tokens of
	// hidden 7168 at top-8 with FP8 dispatch (1 byte an element) in about
	// 77 us at EP8, BF16 combine in about 114 us.
	ll := op(spec.OpEPDispatch, spec.All2AllDeepEPLL, 8, 8)
	copies := 128.0 * 8 * 7168
	if got := r.KernelMs(ll, []float64{copies}) * 1e3; math.Abs(got-77)/77 > 0.15 {
		t.Errorf("DeepEP LL EP8 dispatch %.1f us, README 77 us", got)
	}
	if got := r.KernelMs(op(spec.OpEPCombine, spec.All2AllDeepEPLL, 8, 8), []float64{2 * copies}) * 1e3; math.Abs(got-114)/114 > 0.15 {
		t.Errorf("DeepEP LL EP8 combine %.1f us, README 114 us", got)
	}
	// Across nodes (EP16 over two nodes) the NICs set the time.
	big := 64e6
	in := r.KernelMs(op(spec.OpEPDispatch, spec.All2AllPPLX, 8, 8), []float64{big})
	across := r.KernelMs(op(spec.OpEPDispatch, spec.All2AllPPLX, 16, 16), []float64{big})
	if across < 4*in {
		t.Errorf("cross-node pplx dispatch %.3f ms not several times the NVLink one %.3f ms", across, in)
	}
}

func TestMoEExchangesFollowsVLLM(t *testing.T) {
	for _, c := range []struct {
		l                 spec.Layout
		exchange, kernels bool
	}{
		{spec.Layout{TP: 8, EP: 8}, false, false},
		{spec.Layout{TP: 1, EP: 2, DP: 2}, true, true},
		{spec.Layout{TP: 1, EP: 8, DP: 8}, true, true},
		{spec.Layout{TP: 2, DP: 2}, true, false},
	} {
		if got := spec.MoEExchanges(c.l); got != c.exchange {
			t.Errorf("%s: exchanges %v, want %v", c.l, got, c.exchange)
		}
		if got := spec.UsesAll2AllKernels(c.l); got != c.kernels {
			t.Errorf("%s: all2all kernels %v, want %v", c.l, got, c.kernels)
		}
	}
	if err := spec.CheckAll2AllBackend(spec.All2AllDeepEPLL, spec.Layout{TP: 2, DP: 2}); err == nil {
		t.Error("DeepEP accepted without expert parallelism")
	}
	if err := spec.CheckAll2AllBackend("nccl", spec.Layout{TP: 1, EP: 2, DP: 2}); err == nil {
		t.Error("unknown backend accepted")
	}
}
