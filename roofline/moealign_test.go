package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// TestAlignBlockSizeRealRows holds moe_shuffling, priced as vLLM's
// moe_align_block_size (moealign.go), to H800 KERNEL_ONLY rows one by one:
// the expert map's extra kernel at EP8, and the counting loop's growth with
// the token-expert pairs, alike for a hidden size of 4,096 (Phi-tiny-MoE,
// top-2) and 2,048 (Qwen3-30B-A3B-tiny, top-8).
func TestAlignBlockSizeRealRows(t *testing.T) {
	pts := loadRealPoints(t)
	for _, tc := range []struct {
		file string
		line int
		note string
	}{
		{"frontier-h800/Phi-tiny-MoE-instruct/moe_kernel_only.csv", 2, "EP1, 1 token: 4.1 us"},
		{"frontier-h800/Phi-tiny-MoE-instruct/moe_kernel_only.csv", 10, "EP8, 1 token: 8.6 us"},
		{"frontier-h800/Phi-tiny-MoE-instruct/moe_kernel_only.csv", 162, "EP1, 64 tokens, 128 pairs: 5.4 us"},
		{"frontier-h800/Phi-tiny-MoE-instruct/moe_kernel_only.csv", 170, "EP8, 64 tokens: 9.2 us"},
		{"frontier-h800/Qwen3-30B-A3B-tiny/moe_kernel_only.csv", 2, "EP1, 1 token: 4.3 us"},
		{"frontier-h800/Qwen3-30B-A3B-tiny/moe_kernel_only.csv", 10, "EP8, 1 token: 8.6 us"},
		{"frontier-h800/Qwen3-30B-A3B-tiny/moe_kernel_only.csv", 162, "EP1, 64 tokens, 512 pairs: 8.7 us"},
		{"frontier-h800/Qwen3-30B-A3B-tiny/moe_kernel_only.csv", 170, "EP8, 64 tokens: 13.0 us"},
	} {
		var found bool
		for _, p := range pts {
			if p.file != tc.file || p.line != tc.line || p.op.Name != spec.OpMoEShuffling {
				continue
			}
			found = true
			d, err := LookupDevice(p.device)
			if err != nil {
				t.Fatal(err)
			}
			got := predictPoint(d, p, nil)
			if e := math.Abs(got-p.ms) / p.ms; e > 0.10 {
				t.Errorf("%s:%d (%s): model %.2f us, measured %.2f us (%.0f%% off, bound 10%%)", tc.file, tc.line, tc.note, got*1e3, p.ms*1e3, 100*e)
			}
		}
		if !found {
			t.Errorf("%s:%d has no moe_shuffling point", tc.file, tc.line)
		}
	}
}

// TestAlignBlockSizeLargeBatch checks the large-batch path, which no
// profile in testdata reaches, against sglang PR #14133's benchmark of
// the same kernels (4,096 tokens, 128 experts: 10.5 us at top-1, 19.5 us
// at top-8, so about 9.0 us for the 28,672 more pairs), and that a prefill
// chunk is no longer priced as a copy of hidden states (Qwen3-30B-A3B,
// 2,048 tokens at top-8: 134 MB, some 100 us on an H800).
func TestAlignBlockSizeLargeBatch(t *testing.T) {
	d, err := LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d}
	us := func(experts, topK int, tokens float64) float64 {
		o := spec.Op{Name: spec.OpMoEShuffling, Family: spec.FamilyMoE, Kernels: 1, Width: 2048, TopK: topK,
			LocalExperts: experts, Experts: experts, ElemBytes: 2}
		return r.KernelMs(&o, []float64{tokens}) * 1e3
	}
	growth := us(128, 8, 4096) - us(128, 1, 4096)
	if growth < 9.0*0.7 || growth > 9.0*1.3 {
		t.Errorf("4,096 tokens, 128 experts, top-1 -> top-8: +%.1f us, want 9.0 us within 30%% (sglang PR #14133)", growth)
	}
	if chunk := us(128, 8, 2048); chunk > 15 {
		t.Errorf("a 2,048-token chunk at top-8 aligns in %.1f us, want under 15 us (two kernels and a 32-iteration loop)", chunk)
	}
	for _, tc := range []struct {
		experts, topK int
		tokens        float64
		iters         float64
		extra         int
	}{
		{16, 2, 1, 2, 0},      // 2 pairs, 32 counting threads: one pass each way
		{16, 8, 64, 32, 0},    // 512 pairs over 32 threads: 16 iterations, twice
		{64, 8, 64, 16, 0},    // 64 threads
		{128, 8, 1, 2, 1},     // more than 64 experts: the large path
		{16, 8, 128, 2, 1},    // 1,024 pairs: the large path, one block of 1,024
		{128, 8, 2048, 32, 1}, // 16,384 pairs
	} {
		o := spec.Op{Name: spec.OpMoEShuffling, TopK: tc.topK, Experts: tc.experts}
		iters, extra := alignLoop(&o, []float64{tc.tokens})
		if iters != tc.iters || extra != tc.extra {
			t.Errorf("%d experts, top-%d, %v tokens: %v iterations, %d more kernels; want %v, %d", tc.experts, tc.topK, tc.tokens, iters, extra, tc.iters, tc.extra)
		}
	}
}
