package roofline

import (
	"fmt"
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

// Real operator times on two cards no profile in testdata covers, held
// out (no constant was chosen on them): LLMServingSim's profiler runs of
// Llama-3.1-8B at TP1 on an RTX PRO 6000 Blackwell Server Edition
// (profiled 2026-04-24, vLLM 0.19.0, CUDA 13.0) and an RTX 4090
// (casys-kaist/LLMServingSim at 5daddb2, profiler/perf/<card>/meta-llama/
// Llama-3.1-8B/bf16/tp1/dense.csv: one decoder layer, enforce_eager,
// vLLM's layerwise profiler, the CUDA kernel time under each module,
// per call). Five of each file's 152 token counts are kept here.
//
// What they say (2026-12-04): the GEMMs are priced within 6-27% MAPE over
// each whole file, and on these points at 8.3% (RTX PRO 6000) and 7.9%
// (RTX 4090) mean absolute error (worst +41%, the QKV projection at 512
// tokens, where the Hopper-fitted mid-size efficiency undershoots), but
// the element-wise ops run 1.2-5x faster than priced: at a few tokens
// their floors and block loops (the activation's 2.6 us against ftk's
// 6.5: these cards clock 2.5-2.6 GHz, the H800 the curves are fitted on
// 1.98), and from 128 tokens on their bytes, which the kernel before just
// wrote into these cards' large L2s (GB202 128 MB, AD102 72 MB):
// SiLU-and-mul of 2,048 tokens moves 176 MB in 94 us on the RTX PRO 6000
// (1.9 TB/s, above its 1,597 GB/s of GDDR7), the norm 67 MB in 16 us.
// The curves Ada and Blackwell borrow from Hopper (50 MB of L2, 3.35 TB/s
// of HBM) see neither: a stated gap, not fitted (these runs' end-to-end
// points are held out in docs/validation.md; a fit here would calibrate on their
// machines).
func TestLLMServingSimProfilesHeldOut(t *testing.T) {
	m, err := spec.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]spec.Op{}
	for _, o := range spec.LayerOps(m, spec.Layout{}, 0) {
		ops[o.Name] = o
	}
	first, _, _ := spec.ModelOps(m, spec.Layout{})
	for _, o := range first {
		ops[o.Name] = o
	}
	tokens := []float64{1, 16, 128, 512, 2048}
	for _, card := range []struct {
		device string
		// measured us at tokens, per ftk op; gemmMaxPct bounds the mean
		// absolute error of the GEMM points (measured 2026-12-04 plus a
		// few points: a regression guard, not a target)
		us         map[string][]float64
		gemmMaxPct float64
	}{
		{"rtxpro6000", map[string][]float64{
			spec.OpAttnPreProj:    {35.83, 37.23, 42.98, 92.8, 302.96},
			spec.OpAttnPostProj:   {25.66, 25.58, 31.51, 67.31, 193.19},
			spec.OpMLPUpProj:      {159.49, 160.54, 180.51, 330.49, 1152.83},
			spec.OpMLPDownProj:    {85.53, 81.63, 94.49, 180.43, 608.72},
			spec.OpMLPAct:         {2.68, 2.99, 3.36, 9.87, 94.36},
			spec.OpInputLayernorm: {2.42, 2.43, 3.07, 4.31, 15.71},
			spec.OpAttnRope:       {2.71, 2.79, 2.86, 4.18, 12.01},
			spec.OpEmb:            {3.15, 6.66, 3.02, 4.83, 7.9},
		}, 14},
		{"rtx4090", map[string][]float64{
			spec.OpAttnPreProj:    {54.9, 56.47, 76.92, 166.44, 631.07},
			spec.OpAttnPostProj:   {38.13, 41.03, 44.2, 107.95, 419.48},
			spec.OpMLPUpProj:      {247.29, 253.33, 314.08, 736.7, 2896.81},
			spec.OpMLPDownProj:    {126.77, 131.23, 166.73, 376.01, 1459.55},
			spec.OpMLPAct:         {2.59, 3.29, 4.18, 27.54, 168.94},
			spec.OpInputLayernorm: {1.85, 1.99, 3.09, 6.41, 28.48},
			spec.OpAttnRope:       {2.18, 2.39, 2.47, 5.52, 26.23},
			spec.OpEmb:            {2.84, 5.84, 3.06, 5.14, 10.35},
		}, 12},
	} {
		d, err := LookupDevice(card.device)
		if err != nil {
			t.Fatal(err)
		}
		r := Roofline{Device: d}
		gemmAPE, gemmN := 0.0, 0
		for _, name := range []string{spec.OpAttnPreProj, spec.OpAttnPostProj, spec.OpMLPUpProj, spec.OpMLPDownProj, spec.OpMLPAct, spec.OpInputLayernorm, spec.OpAttnRope, spec.OpEmb} {
			o, ok := ops[name]
			if !ok {
				t.Fatalf("llama-3.1-8b has no %s op", name)
			}
			line := ""
			for i, x := range tokens {
				got := r.KernelMs(&o, []float64{x}) * 1e3
				pct := 100 * (got - card.us[name][i]) / card.us[name][i]
				line += fmt.Sprintf(" %.0f:%+.0f%%", x, pct)
				if ClassOf(name) == ClassGEMM {
					gemmAPE += math.Abs(pct)
					gemmN++
				}
			}
			t.Logf("%-10s %-26s ftk vs measured by tokens:%s", card.device, name, line)
		}
		mean := gemmAPE / float64(gemmN)
		t.Logf("%s: GEMM points mean absolute error %.1f%%", card.device, mean)
		if mean > card.gemmMaxPct {
			t.Errorf("%s: GEMM points' mean absolute error %.1f%%, beyond %.0f%%", card.device, mean, card.gemmMaxPct)
		}
	}
}

// TestLLMServingSimDecodeAttentionHeldOut checks the decode attention of
// the same profiles (attention.csv, pure decode rows: sequences x
// per-sequence KV length, Llama-3.1-8B TP1, one layer's kernel time).
// Held out. At batch 1 and short contexts the kernels take 12-15 us where
// ftk's floor and bandwidth give 8-11 (-28 to -34%); from 8 sequences at
// 4,096 tokens on they stream the KV cache at 1.24-1.53 TB/s on the RTX
// PRO 6000 and 0.82-0.95 TB/s on the RTX 4090, and ftk (0.85 of the
// datasheet bandwidth) is within -2 to +13%.
func TestLLMServingSimDecodeAttentionHeldOut(t *testing.T) {
	m, err := spec.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	var dec spec.Op
	for _, o := range spec.LayerOps(m, spec.Layout{}, 0) {
		if o.Name == spec.OpAttnDecode {
			dec = o
		}
	}
	for _, tc := range []struct {
		device             string
		seqs, kv           float64
		measuredUs, errPct float64 // errPct: ftk's signed error as measured 2026-12-04
	}{
		{"rtxpro6000", 1, 1024, 14.592, -28},
		{"rtxpro6000", 8, 4096, 108.16, -2},
		{"rtxpro6000", 64, 1024, 221.237, -7},
		{"rtxpro6000", 128, 4096, 1461.14, +9},
		{"rtxpro6000", 256, 16384, 11238.9, +13},
		{"rtx4090", 1, 1024, 14.1853, -13},
		{"rtx4090", 8, 4096, 164.678, 0},
		{"rtx4090", 64, 1024, 333.295, -3},
		{"rtx4090", 128, 4096, 2302.31, +9},
		{"rtx4090", 256, 16384, 18003.5, +11},
	} {
		d, err := LookupDevice(tc.device)
		if err != nil {
			t.Fatal(err)
		}
		got := Roofline{Device: d}.KernelMs(&dec, []float64{tc.seqs, tc.kv}) * 1e3
		pct := 100 * (got - tc.measuredUs) / tc.measuredUs
		t.Logf("%-10s %3.0f seqs x %5.0f tokens: measured %8.1f us, ftk %8.1f (%+.0f%%)", tc.device, tc.seqs, tc.kv, tc.measuredUs, got, pct)
		if math.Abs(pct-tc.errPct) > 3 {
			t.Errorf("%s %.0f x %.0f: ftk %.1f us, measured %.1f: %+.0f%%, want %+.0f%% +- 3 points", tc.device, tc.seqs, tc.kv, got, tc.measuredUs, pct, tc.errPct)
		}
	}
}
