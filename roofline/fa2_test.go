package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// An A100 attention op is priced by FA2's terms only where the version is
// given and the KV cache is 16-bit: without a version (the public A800 and
// A100 points) the attention classes' curves keep pricing it, unchanged,
// and so they do an FP8 cache, which vLLM's FLASH_ATTN takes on FA3 only.
func TestFA2OnlyWhenNamed(t *testing.T) {
	d, err := LookupDevice("a100")
	if err != nil {
		t.Fatal(err)
	}
	ops := []struct {
		o spec.Op
		x []float64
	}{
		{spec.Op{Name: spec.OpAttnDecode, Family: spec.FamilyAttention, Kernels: 1, QHeads: 32, KVHeads: 8, HeadDim: 128, ElemBytes: 2}, []float64{64, 2048}},
		{spec.Op{Name: spec.OpAttnPrefill, Family: spec.FamilyAttention, Kernels: 1, QHeads: 32, KVHeads: 8, HeadDim: 128, ElemBytes: 2}, []float64{0, 4096}},
	}
	for _, c := range ops {
		plain := Roofline{Device: d}
		named := Roofline{Device: d, Kernels: KernelsFor(d.Arch, "0.14.0")}
		curves := Roofline{Device: d}
		curves.Device = &Device{Device: d.Device, Curves: d.Curves}
		curves.Device.Curves.FA2 = nil
		a, b, want := plain.KernelMs(&c.o, c.x), named.KernelMs(&c.o, c.x), curves.KernelMs(&c.o, c.x)
		if a != want {
			t.Errorf("%s without a version: %.4f ms, the classes' curves %.4f ms", c.o.Name, a, want)
		}
		fp8 := c.o
		fp8.ElemBytes = 1
		if p, n, w := plain.KernelMs(&fp8, c.x), named.KernelMs(&fp8, c.x), curves.KernelMs(&fp8, c.x); p != w || n != w {
			t.Errorf("%s with an FP8 cache: %.4f ms without a version, %.4f ms at vLLM 0.14.0, the classes' curves %.4f ms", c.o.Name, p, n, w)
		}
		if f := named.Device.Curves.FA2; b != a {
			var us float64
			if c.o.Name == spec.OpAttnDecode {
				us = f.decodeUs(&c.o, c.x, d.SMs, d.HBMGBps)
			} else {
				us = f.prefillUs(&c.o, c.x, d.SMs, d.HBMGBps)
			}
			if math.Abs(b-us/1e3) > 1e-12 {
				t.Errorf("%s at vLLM 0.14.0: %.4f ms, FA2's terms %.4f ms", c.o.Name, b, us/1e3)
			}
		} else {
			t.Errorf("%s: %.4f ms with and without a version (FA2 not applied)", c.o.Name, a)
		}
	}
}

// FA2's split heuristic (flash_api.cpp num_splits_heuristic) on an A100's
// 216 CTA slots: a grid near the slots is not split; 8 CTAs over 128 key
// blocks take 26 splits (worked by hand: the best eligible efficiency is
// 26's, 208 of 216 slots; 27 would fill them but walks the 5 blocks a
// split that 26 does, so is not eligible, nor are 23-25, and 22 reaches
// 0.815, under 85% of the best).
func TestFA2Splits(t *testing.T) {
	for _, tc := range []struct{ ctas, slots, blocks, want int }{
		{200, 216, 128, 1},
		{8, 216, 128, 26},
		{8, 216, 1, 1},
		{1, 216, 3, 3},
	} {
		if got := fa2Splits(tc.ctas, tc.slots, tc.blocks); got != tc.want {
			t.Errorf("fa2Splits(%d, %d, %d) = %d, want %d", tc.ctas, tc.slots, tc.blocks, got, tc.want)
		}
	}
}
