package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// cutlassFP8Layer prices a per-tensor FP8 grouped GEMM (static activation
// scales, as ModelOpt checkpoints carry) of hidden h, width w on an H100
// whose vLLM 0.24.0 kernels run FlashInfer's CUTLASS MoE untuned (as the
// kernel tables' rows ran).
func cutlassFP8Layer(t *testing.T, h, w, topK, experts, ep int, nonGated bool, tokens float64) float64 {
	t.Helper()
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: NewDevice(h100), Compiled: true, Kernels: KernelsFor(spec.ArchHopper, "0.24.0"), FlashInferUntuned: true}
	local := experts / ep
	o := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: h, ExpertWidth: w, LocalExperts: local, Experts: experts,
		TopK: topK, ElemBytes: 1, FP8: true, FP8StaticScales: true, NonGatedExperts: nonGated}
	routed := tokens * float64(topK) / float64(ep)
	return r.KernelMs(&o, []float64{routed, math.Ceil(routed / float64(local)), 0, tokens}) * 1e3
}

// Per-tensor FP8 on FlashInfer's CUTLASS MoE is priced by the CTA tiles
// of its default SM90 tactic (128 tokens x 16 columns x 128-deep K steps):
// one expert with one row of a 256-wide layer runs 16 + 16 CTAs (one
// wave each), the gate/up GEMM two K steps, the down GEMM one; a
// non-gated layer runs half the gate/up column tiles.
func TestCutlassFP8TileCounts(t *testing.T) {
	f := hopperCutlassFP8MoE
	step := f.IterUs * (1 - f.FullShare/128)
	rest := func(h, w, tokens float64) float64 {
		return f.FloorUs + (tokens*h*f.TokenPs+tokens*(h+w)*f.RowPs)/1e6
	}
	for _, tc := range []struct {
		name     string
		h, w     int
		nonGated bool
		want     float64
	}{
		{"gated 256x128", 256, 128, false, (f.TileUs + 2*step) + (f.TileUs + step)},
		{"non-gated 256x256", 256, 256, true, (f.TileUs + 2*step) + (f.TileUs + 2*step)},
		// 2,112 columns of gate/up = 132 tiles: one wave of the H100's
		// 132 SMs; 2,128 = 133 tiles: two.
		{"gated 128x1056", 128, 1056, false, (f.TileUs + step) + (f.TileUs + 9*step)},
		{"gated 128x1064", 128, 1064, false, 2*(f.TileUs+step) + (f.TileUs + 9*step)},
	} {
		got := cutlassFP8Layer(t, tc.h, tc.w, 1, 1, 1, tc.nonGated, 1) - rest(float64(tc.h), float64(tc.w), 1)
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: tiles %.6f us, want %.6f", tc.name, got, tc.want)
		}
	}
}

// The default tactic's K step costs less the fuller its 128-token tile,
// as AIConfigurator's 0.24.0 H100 rows show (2,816/704, top-8 of 128
// experts: 1,482 us at 16 tokens, one row an expert, 1,032 us at 2,048,
// 128 rows an expert, 2,376 us at 3,072, a second tile each): the price
// falls from 16 to 2,048 tokens and jumps past it.
func TestCutlassFP8TileFill(t *testing.T) {
	at := func(tokens float64) float64 { return cutlassFP8Layer(t, 2816, 704, 8, 128, 1, false, tokens) }
	p16, p2048, p3072 := at(16), at(2048), at(3072)
	if !(p2048 < 0.8*p16) || !(p3072 > 1.5*p2048) {
		t.Errorf("16 tokens %.0f us, 2,048 %.0f us, 3,072 %.0f us: want 2,048 < 0.8 x 16 and 3,072 > 1.5 x 2,048", p16, p2048, p3072)
	}
	for _, c := range []struct{ got, measured float64 }{{p16, 1482}, {p2048, 1032}, {p3072, 2376}} {
		if math.Abs(c.got/c.measured-1) > 0.15 {
			t.Errorf("priced %.0f us, measured %.0f us", c.got, c.measured)
		}
	}
}

// The tile terms price only the per-tensor FP8 layers vLLM 0.24 runs on
// FlashInfer's CUTLASS MoE on Hopper: without a vLLM version (the MoE
// classes' curves) and on Ada (no Hopper terms) they do not apply, nor to
// a compressed-tensors layer (vLLM's own CUTLASS MoE), its grouped GEMM
// or its alignment, nor to a layer with dynamic activation scales (Triton,
// priced by its record).
func TestCutlassFP8TileOnlyWhenNamed(t *testing.T) {
	o := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: 2816, ExpertWidth: 704, LocalExperts: 128, Experts: 128,
		TopK: 8, ElemBytes: 1, FP8: true, FP8StaticScales: true}
	x := []float64{128, 1, 0, 16}
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: NewDevice(h100), Compiled: true, Kernels: KernelsFor(spec.ArchHopper, "0.24.0")}
	shuffle := spec.Op{Name: spec.OpMoEShuffling, Family: spec.FamilyMoE, Kernels: 1, Width: 2816, TopK: 8, LocalExperts: 128, Experts: 128, ElemBytes: 2, FP8: true}
	for _, op := range []spec.Op{o, shuffle} {
		op.CutlassMoE = true
		if _, ok := r.hopperCutlassMoEUs(&op, x); ok {
			t.Errorf("compressed-tensors %s: priced as FlashInfer's CUTLASS MoE", op.Name)
		}
	}
	dynamic := o
	dynamic.FP8StaticScales = false
	if _, ok := r.hopperCutlassMoEUs(&dynamic, x); ok || r.tritonMoE(&dynamic) == nil {
		t.Errorf("dynamic activation scales: priced as FlashInfer's CUTLASS MoE %v, by Triton %v; want Triton", ok, r.tritonMoE(&dynamic) != nil)
	}
	for _, name := range []string{"h100", "l40s"} {
		dev, err := spec.LookupDevice(name)
		if err != nil {
			t.Fatal(err)
		}
		d := NewDevice(dev)
		if _, ok := (Roofline{Device: d, Compiled: true}).hopperCutlassMoEUs(&o, x); ok {
			t.Errorf("%s without a vLLM version: priced by the CUTLASS tiles", name)
		}
		_, ok := (Roofline{Device: d, Compiled: true, Kernels: KernelsFor(dev.Arch, "0.24.0")}).hopperCutlassMoEUs(&o, x)
		if want := dev.Arch == spec.ArchHopper; ok != want {
			t.Errorf("%s with vLLM 0.24.0: priced by the CUTLASS tiles %v, want %v", name, ok, want)
		}
	}
}

// A served vLLM autotunes FlashInfer's tactics at warm-up: its per-tensor
// FP8 layer is priced with the block-scale path's terms (the proxy in
// moecutlasshopper.go), below the untuned fallback's tiles at every batch
// of AIConfigurator's token grid, and at least the HBM time of the active
// experts' weights.
func TestCutlassFP8ServedTuned(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	d := NewDevice(h100)
	o := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: 2816, ExpertWidth: 704, LocalExperts: 128, Experts: 128,
		TopK: 8, ElemBytes: 1, FP8: true, FP8StaticScales: true}
	served := Roofline{Device: d, Compiled: true, Kernels: KernelsFor(spec.ArchHopper, "0.24.0")}
	untuned := served
	untuned.FlashInferUntuned = true
	block, _ := d.Curves.FlashInferMoETerms(MoEFlashInferCutlass, "fp8_block")
	for _, tokens := range []float64{1, 16, 128, 2048, 16384} {
		routed := tokens * 8
		x := []float64{routed, math.Ceil(routed / 128), 0, tokens}
		s, sok := served.hopperCutlassMoEUs(&o, x)
		u, uok := untuned.hopperCutlassMoEUs(&o, x)
		hbm := math.Min(routed, 128) * 3 * 2816 * 704 / (d.HBMGBps * 1e3)
		if !sok || !uok || s != block.LayerUs(&o, x, d) || s >= u || s < hbm {
			t.Errorf("%v tokens: served %.0f us (%v), untuned %.0f us (%v), HBM %.0f us: want the block terms' price, below the untuned, above the HBM time", tokens, s, sok, u, uok, hbm)
		}
	}
}
