package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// quantFitRow is one FP8 gemm row: measured time and the device model's
// GEMM time (us), its tokens and its activation elements (tokens x K).
type quantFitRow struct{ measuredUs, gemmUs, tokens, elems float64 }

// fp8QuantDir is the testdata database of a path's table and device.
func fp8QuantDir(version, device string) string {
	if version == "0.14.0" {
		return filepath.Join("..", "testdata", "aiconfigurator", device+"_sxm")
	}
	return filepath.Join("..", "testdata", "aiconfigurator-"+version[:4], device+"_sxm")
}

// fp8QuantRows returns the rows of the gemm table of device d (vLLM
// version v, database dir) priced by path p, with their GEMM priced by the
// device model; tables caches the tables read.
func fp8QuantRows(t *testing.T, tables map[string]*kerneldb.Table, dir, v string, d *spec.Device, p roofline.FP8QuantPath) []quantFitRow {
	t.Helper()
	tb := tables[dir+"\x00"+v]
	if tb == nil {
		db, err := kerneldb.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.Resolve("gemm_perf", v)
		if err != nil {
			t.Fatal(err)
		}
		if tb, err = kerneldb.ReadTable(res.Path); err != nil {
			t.Fatal(err)
		}
		tables[dir+"\x00"+v] = tb
	}
	r := roofline.Roofline{Device: roofline.NewDevice(d), Compiled: true}
	var rows []quantFitRow
	for _, g := range tb.GEMM {
		if g.Version != p.Table || g.Dtype != p.Dtype || g.KernelSource != p.KernelSource {
			continue
		}
		rows = append(rows, quantFitRow{g.LatencyMs * 1e3, FP8GEMMRowMs(r, &g) * 1e3, float64(g.M), float64(g.M) * float64(g.K)})
	}
	return rows
}

// fitFP8Quant fits floor (us), bytes per element (at hbmGBps) and, with
// perToken, a time per token (us) to the measured time less the GEMM's,
// least squares of the relative error, on the rows not held out (every
// fifth, in file order, is).
func fitFP8Quant(rows []quantFitRow, hbmGBps float64, perToken bool) (floorUs, bytesPerElem, tokenUs float64) {
	n := 2
	if perToken {
		n = 3
	}
	var a [3][4]float64 // normal equations, augmented
	for i, r := range rows {
		if i%5 == 4 {
			continue
		}
		x := [3]float64{1, r.elems / (hbmGBps * 1e3), r.tokens}
		w := 1 / (r.measuredUs * r.measuredUs)
		y := r.measuredUs - r.gemmUs
		for j := range n {
			for l := range n {
				a[j][l] += w * x[j] * x[l]
			}
			a[j][3] += w * x[j] * y
		}
	}
	// Gauss-Jordan elimination (the matrix is symmetric positive definite).
	for j := range n {
		for l := range n {
			if l == j {
				continue
			}
			f := a[l][j] / a[j][j]
			for c := range 4 {
				a[l][c] -= f * a[j][c]
			}
		}
	}
	floorUs, bytesPerElem = a[0][3]/a[0][0], a[1][3]/a[1][1]
	if perToken {
		tokenUs = a[2][3] / a[2][2]
	}
	return floorUs, bytesPerElem, tokenUs
}

// rowUs prices row q with path p on device model r.
func rowUs(r roofline.Roofline, p roofline.FP8QuantPath, q quantFitRow) float64 {
	return r.RowUs(p, q.gemmUs, q.tokens, q.elems/q.tokens)
}

// fitEagerFP8Quant fits an eager path's host time, unaligned host time
// (only where p stores one), floor and bytes per element by Nelder-Mead
// on the relative error of the rows not held out, from a start that is
// none of the stored values (100 us host, 10 us unaligned, 10 us floor,
// 10 bytes an element), every term kept non-negative.
func fitEagerFP8Quant(r roofline.Roofline, rows []quantFitRow, p roofline.FP8QuantPath) roofline.FP8QuantPath {
	with := func(x []float64) roofline.FP8QuantPath {
		q := p
		q.HostUs, q.FloorUs, q.BytesPerElem, q.UnalignedHostUs = x[0], x[1], x[2], 0
		if p.UnalignedHostUs > 0 {
			q.UnalignedHostUs = x[3]
		}
		return q
	}
	obj := func(x []float64) float64 {
		for _, v := range x {
			if v < 0 {
				return math.Inf(1)
			}
		}
		q := with(x)
		s := 0.0
		for i, row := range rows {
			if i%5 == 4 {
				continue
			}
			e := (rowUs(r, q, row) - row.measuredUs) / row.measuredUs
			s += e * e
		}
		return s
	}
	x := []float64{100, 10, 10, 10}
	for range 3 { // restarts from the best point
		x = nelderMead(obj, x, []float64{20, 5, 5, 5}, 600)
	}
	return with(x)
}

// quantMAPE is the MAPE (and bias), in percent, of path p over the fitted
// (held false) or held-out rows.
func quantMAPE(r roofline.Roofline, rows []quantFitRow, p roofline.FP8QuantPath, held bool) (mape, bias float64) {
	n := 0
	for i, q := range rows {
		if (i%5 == 4) != held {
			continue
		}
		e := (rowUs(r, p, q) - q.measuredUs) / q.measuredUs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// drifted says a refitted constant is off its stored value by more than
// 3% (and more than 0.5 of its unit, for constants near zero).
func drifted(fit, stored float64) bool {
	return math.Abs(fit-stored) > math.Max(0.03*math.Abs(stored), 0.5)
}

// The activation-quantization terms of AIConfigurator's FP8 gemm rows
// (roofline/fp8quant.go) are what a fit on the rows gives, every fifth row
// held out: least squares for the graphed paths, Nelder-Mead for the
// eager ones (host time, floor, bytes); the fit reproduces each stored
// constant within 3% (1% for the least-squares ones), and on the held-out
// rows GEMM + quantization (+ host) prices each path within issue 31's
// target for its device (10% H100, 15% B200), except vLLM 0.24.0's
// CUTLASS per-tensor rows (20%), where the term must still beat the GEMM
// alone and, on the device it is fitted on, leave a bias within 10%. A
// path without a device is fitted on H100 and checked on every device the
// testdata has that has no path of its own.
func TestFP8QuantPathsRefit(t *testing.T) {
	tables := map[string]*kerneldb.Table{}
	for _, p := range roofline.FP8QuantPaths() {
		devs := []string{p.Device}
		if p.Device == "" {
			devs = []string{"h100", "b200"}
		}
		for i, dev := range devs {
			if own, _ := roofline.LookupFP8QuantPath(p.Table, p.Dtype, p.KernelSource, dev); p.Device == "" && own.Device == dev {
				continue // the device has its own path
			}
			d, err := spec.LookupDevice(dev)
			if err != nil {
				t.Fatal(err)
			}
			r := roofline.Roofline{Device: roofline.NewDevice(d), Compiled: true}
			rows := fp8QuantRows(t, tables, fp8QuantDir(p.Table, dev), p.Table, d, p)
			name := p.Table + " " + p.Dtype + " " + p.KernelSource + " " + dev
			if len(rows) < 100 {
				t.Fatalf("%s: %d rows", name, len(rows))
			}
			if i == 0 {
				if p.HostUs == 0 {
					floor, bpe, tok := fitFP8Quant(rows, d.HBMGBps, p.TokenUs > 0)
					t.Logf("%s: refit floor %.3f us, %.3f bytes/element, %.5f us/token", name, floor, bpe, tok)
					if math.Abs(floor/p.FloorUs-1) > 0.01 || math.Abs(bpe/p.BytesPerElem-1) > 0.01 || (p.TokenUs > 0 && math.Abs(tok/p.TokenUs-1) > 0.01) {
						t.Errorf("%s: refit floor %.2f us, %.2f bytes/element, %.5f us/token; stored %.2f, %.2f, %.5f", name, floor, bpe, tok, p.FloorUs, p.BytesPerElem, p.TokenUs)
					}
				} else {
					f := fitEagerFP8Quant(r, rows, p)
					t.Logf("%s: refit host %.2f us (+%.2f unaligned), floor %.2f us, %.2f bytes/element", name, f.HostUs, f.UnalignedHostUs, f.FloorUs, f.BytesPerElem)
					if drifted(f.HostUs, p.HostUs) || drifted(f.UnalignedHostUs, p.UnalignedHostUs) || drifted(f.FloorUs, p.FloorUs) || drifted(f.BytesPerElem, p.BytesPerElem) {
						t.Errorf("%s: refit host %.2f us (+%.2f), floor %.2f us, %.2f bytes/element; stored %.2f (+%.2f), %.2f, %.2f",
							name, f.HostUs, f.UnalignedHostUs, f.FloorUs, f.BytesPerElem, p.HostUs, p.UnalignedHostUs, p.FloorUs, p.BytesPerElem)
					}
				}
			}
			fm, fb := quantMAPE(r, rows, p, false)
			hm, hb := quantMAPE(r, rows, p, true)
			gm, gb := quantMAPE(r, rows, roofline.FP8QuantPath{}, true)
			t.Logf("%s: %d rows; fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%); GEMM alone held out %.1f%% (%+.1f%%)",
				name, len(rows), fm, fb, hm, hb, gm, gb)
			bound := 10.0
			if dev == "b200" {
				bound = 15
			}
			if p.Table == "0.24.0" && p.Dtype == "fp8" {
				if hm >= gm || (i == 0 && math.Abs(hb) > 10) {
					t.Errorf("%s: held out, %.1f%% MAPE (%+.1f%% bias) with the term, %.1f%% without: want less than without and the bias within 10%%", name, hm, hb, gm)
				}
			} else if hm > bound {
				t.Errorf("%s: held-out MAPE %.1f%% over %.0f%%", name, hm, bound)
			}
		}
	}
}
