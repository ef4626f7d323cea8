package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// hopperCutlassMoERows reads the balanced FlashInfer CUTLASS rows of
// dtype of AIConfigurator's vLLM 0.24.0 H100 moe table in testdata, with
// what MoERowMs prices them with: vLLM's routing op and the grouped GEMM.
func hopperCutlassMoERows(t *testing.T, d *roofline.Device, dtype string) []moeFitRow {
	t.Helper()
	db, err := kerneldb.Open(filepath.Join("..", "testdata", "aiconfigurator-0.24", "h100_sxm"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Resolve(kerneldb.TableMoE, "0.24.0")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kerneldb.ReadTable(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	r := roofline.Roofline{Device: d, Compiled: true, CollectivesAligned: true}
	var rows []moeFitRow
	for _, m := range tb.MoE {
		if m.Distribution != "balanced" || m.Dtype != dtype || roofline.MoEKernelOfSource(m.KernelSource) != roofline.MoEFlashInferCutlass {
			continue
		}
		local := max(m.Experts/m.MoEEP, 1)
		gg := spec.Op{Name: spec.OpMoEGroupedGEMM, Family: spec.FamilyMoE, Kernels: 3, K: m.Hidden, ExpertWidth: max(m.InterSize/m.MoETP, 1),
			LocalExperts: local, Experts: m.Experts, TopK: m.TopK, ElemBytes: 1, FP8: true, FP8Block: dtype == "fp8_block"}
		routing := spec.Op{Name: spec.OpMoERoutingTopK, Family: spec.FamilyMoE, Kernels: 3, Width: m.Experts, TopK: m.TopK, ElemBytes: 4}
		tokens := float64(m.NumTokens)
		routed := tokens * float64(m.TopK) / float64(m.MoEEP)
		rows = append(rows, moeFitRow{m.KernelSource, m.LatencyMs, r.TimeMs(&routing, []float64{tokens}, spec.KernelOnly), gg,
			[]float64{routed, math.Ceil(routed / float64(local)), 0, tokens}})
	}
	return rows
}

// The FlashInfer CUTLASS MoE terms of Hopper's device model
// (roofline/moecutlasshopper.go) are a Nelder-Mead minimum of the
// relative error on AIConfigurator's vLLM 0.24.0 H100 moe rows of that
// kernel with every fifth row held out: a refit from the stored terms
// gains under a quarter of a point (the tile is fixed at 128 tokens, so
// ComputeEff and TileHalfTokens trade: the test checks the error, not
// each constant), the stored terms reach the recorded fitted error within
// a tenth of a point, and the held-out rows stay within the bounds:
// issue 31's 10% for block FP8; per-tensor FP8 misses it (rows not
// monotonic in the tokens, roofline/moecutlasshopper.go), bounded at
// the 18% the fit reaches.
func TestHopperCutlassMoERefit(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	d := roofline.NewDevice(h100)
	for _, tc := range []struct {
		dtype           string
		fitted, maxHeld float64
	}{{"fp8", 17.35, 18}, {"fp8_block", 8.85, 10}} {
		rows := hopperCutlassMoERows(t, d, tc.dtype)
		if len(rows) < 1000 {
			t.Fatalf("%s: %d rows", tc.dtype, len(rows))
		}
		stored, ok := d.Curves.FlashInferMoETerms(roofline.MoEFlashInferCutlass, tc.dtype)
		if !ok {
			t.Fatalf("no H100 FlashInfer CUTLASS terms for %s", tc.dtype)
		}
		start := moeTermsParams(stored)
		step := make([]float64, len(start))
		for i, v := range start {
			step[i] = 0.1*v + 1e-3
		}
		fit := withMoETermsParams(stored, nelderMead(func(p []float64) float64 {
			m, _, _ := flashInferMoEErr(d, withMoETermsParams(stored, p), rows, "", false)
			return m
		}, start, step, 400))
		sm, _, _ := flashInferMoEErr(d, stored, rows, "", false)
		rm, _, _ := flashInferMoEErr(d, fit, rows, "", false)
		hm, hb, n := flashInferMoEErr(d, stored, rows, "", true)
		t.Logf("%s: %d rows; fitted %.2f%% (refit %.2f%%: %.4g); held out %d rows, MAPE %.1f%% (bias %+.1f%%)", tc.dtype, len(rows), sm, rm, moeTermsParams(fit), n, hm, hb)
		if sm-rm > 0.25 {
			t.Errorf("%s: a refit from the stored terms gains %.2f points (%.2f%% -> %.2f%%): refit them", tc.dtype, sm-rm, sm, rm)
		}
		if math.Abs(sm-tc.fitted) > 0.1 {
			t.Errorf("%s: the stored terms reach %.2f%% on the fitted rows, recorded %.2f%%", tc.dtype, sm, tc.fitted)
		}
		if hm > tc.maxHeld {
			t.Errorf("%s: held-out MAPE %.1f%% > %.0f%%", tc.dtype, hm, tc.maxHeld)
		}
	}
}
