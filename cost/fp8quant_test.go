package cost

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// quantFitRow is one FP8 gemm row: measured time and the device model's
// GEMM time (us), and its activation elements (tokens x K).
type quantFitRow struct{ measuredUs, gemmUs, elems float64 }

// fp8QuantRows returns the rows of gemm table (device d, vLLM version v)
// priced by path p.
func fp8QuantRows(t *testing.T, dir, v string, d *spec.Device, p roofline.FP8QuantPath) []quantFitRow {
	t.Helper()
	db, err := kerneldb.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Resolve("gemm_perf", v)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kerneldb.ReadTable(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	r := roofline.Roofline{Device: roofline.NewDevice(d), Compiled: true}
	var rows []quantFitRow
	for _, g := range tb.GEMM {
		if g.Version != p.Table || g.Dtype != p.Dtype || g.KernelSource != p.KernelSource {
			continue
		}
		o := spec.Op{Name: spec.OpAttnPostProj, Family: spec.FamilyLinear, Kernels: 1, K: g.K, N: g.N, ElemBytes: 1, FP8: true}
		rows = append(rows, quantFitRow{g.LatencyMs * 1e3, r.TimeMs(&o, []float64{float64(g.M)}, spec.KernelOnly) * 1e3, float64(g.M) * float64(g.K)})
	}
	return rows
}

// fitFP8Quant fits floor (us) and bytes per element (at hbmGBps) to the
// measured time less the GEMM's, least squares of the relative error, on
// the rows not held out (every fifth, in file order, is).
func fitFP8Quant(rows []quantFitRow, hbmGBps float64) (floorUs, bytesPerElem float64) {
	var a00, a01, a11, b0, b1 float64
	for i, r := range rows {
		if i%5 == 4 {
			continue
		}
		x1 := r.elems / (hbmGBps * 1e3)
		w := 1 / (r.measuredUs * r.measuredUs)
		y := r.measuredUs - r.gemmUs
		a00 += w
		a01 += w * x1
		a11 += w * x1 * x1
		b0 += w * y
		b1 += w * x1 * y
	}
	det := a00*a11 - a01*a01
	return (b0*a11 - b1*a01) / det, (a00*b1 - a01*b0) / det
}

// quantMAPE is the MAPE (and bias), in percent, of GEMM + quantization
// (floorUs, bytesPerElem) over the fitted (held false) or held-out rows.
func quantMAPE(rows []quantFitRow, hbmGBps, floorUs, bytesPerElem float64, held bool) (mape, bias float64) {
	n := 0
	for i, r := range rows {
		if (i%5 == 4) != held {
			continue
		}
		e := (r.gemmUs + floorUs + r.elems*bytesPerElem/(hbmGBps*1e3) - r.measuredUs) / r.measuredUs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// The activation-quantization terms of AIConfigurator's FP8 gemm rows
// (roofline/fp8quant.go) are what a least-squares fit on H100 rows gives,
// with every fifth row held out: the fit reproduces each stored constant
// within 1%, and on the held-out rows the GEMM + quantization prices the
// 0.14.0 rows (in testdata) within issue 31's 10% per kernel source. The
// 0.24.0 rows (FTK_AICONFIGURATOR only) are not within it (20%); there the
// term must still beat the GEMM alone and leave a bias within 10%.
func TestFP8QuantPathsRefit(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	full := os.Getenv("FTK_AICONFIGURATOR")
	for _, p := range roofline.FP8QuantPaths() {
		dir := filepath.Join("..", "testdata", "aiconfigurator", "h100_sxm")
		if p.Table != "0.14.0" {
			if full == "" {
				t.Logf("%s %s %s: FTK_AICONFIGURATOR not set, not refitted", p.Table, p.Dtype, p.KernelSource)
				continue
			}
			dir = filepath.Join(full, "h100_sxm")
		}
		rows := fp8QuantRows(t, dir, p.Table, h100, p)
		if len(rows) < 100 {
			t.Fatalf("%s %s %s: %d rows", p.Table, p.Dtype, p.KernelSource, len(rows))
		}
		floor, bpe := fitFP8Quant(rows, h100.HBMGBps)
		if math.Abs(floor/p.FloorUs-1) > 0.01 || math.Abs(bpe/p.BytesPerElem-1) > 0.01 {
			t.Errorf("%s %s %s: refit floor %.2f us, %.2f bytes/element; stored %.2f, %.2f", p.Table, p.Dtype, p.KernelSource, floor, bpe, p.FloorUs, p.BytesPerElem)
		}
		fm, fb := quantMAPE(rows, h100.HBMGBps, p.FloorUs, p.BytesPerElem, false)
		hm, hb := quantMAPE(rows, h100.HBMGBps, p.FloorUs, p.BytesPerElem, true)
		gm, gb := quantMAPE(rows, h100.HBMGBps, 0, 0, true)
		t.Logf("%s %s %s: %d rows; refit %.2f us + %.2f B/element; fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%); GEMM alone held out %.1f%% (%+.1f%%)",
			p.Table, p.Dtype, p.KernelSource, len(rows), floor, bpe, fm, fb, hm, hb, gm, gb)
		if p.Table == "0.14.0" && hm > 10 {
			t.Errorf("%s %s %s: held-out MAPE %.1f%% over 10%%", p.Table, p.Dtype, p.KernelSource, hm)
		}
		if hm >= gm || math.Abs(hb) > 10 {
			t.Errorf("%s %s %s: held out, %.1f%% MAPE (%+.1f%% bias) with the term, %.1f%% without: want less than without and the bias within 10%%", p.Table, p.Dtype, p.KernelSource, hm, hb, gm)
		}
	}
}
