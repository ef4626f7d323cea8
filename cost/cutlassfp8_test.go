package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// cutlassFP8Rows reads the CUTLASS per-tensor fp8 rows of the vLLM 0.24.0
// gemm table of the database at dir.
func cutlassFP8Rows(t *testing.T, dir string) []kerneldb.GEMMRow {
	t.Helper()
	db, err := kerneldb.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Resolve(kerneldb.TableGEMM, "0.24.0")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kerneldb.ReadTable(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []kerneldb.GEMMRow
	for _, g := range tb.GEMM {
		if g.Dtype == "fp8" && g.KernelSource == roofline.KernelCutlassFP8 {
			rows = append(rows, g)
		}
	}
	return rows
}

// cutlassFP8Fit prices rows with CUTLASS terms c on device d (the GEMM by
// roofline's CutlassFP8Us over the collector's six layers, as
// FP8GEMMRowMs does) and quantization path q; with refitQuant, q's floor,
// bytes and per-token time are refitted by least squares on the rows not
// held out first. It returns the quantization used and the MAPE and bias
// (percent) over the held-out rows (held) or the others.
func cutlassFP8Fit(rows []kerneldb.GEMMRow, d *roofline.Device, c roofline.CutlassFP8, q roofline.FP8QuantPath, refitQuant, held bool) (roofline.FP8QuantPath, float64, float64) {
	r := roofline.Roofline{Device: d, Compiled: true, Kernels: roofline.Kernels{FP8Linear: roofline.FP8Dispatch024}}
	fit := make([]quantFitRow, len(rows))
	for i := range rows {
		g := &rows[i]
		r.RepeatedBlockBytes = gemmCollectorLayers * float64(g.N) * float64(g.K)
		o := spec.Op{Name: spec.OpMLPDownProj, Family: spec.FamilyLinear, Kernels: 1, K: g.K, N: g.N, ElemBytes: 1, FP8: true}
		fit[i] = quantFitRow{g.LatencyMs * 1e3, r.CutlassFP8Us(c, &o, float64(g.M)), float64(g.M), float64(g.M) * float64(g.K)}
	}
	if refitQuant {
		q.FloorUs, q.BytesPerElem, q.TokenUs = fitFP8Quant(fit, d.HBMGBps, true)
	}
	m, b := quantMAPE(r, fit, q, held)
	return q, m, b
}

// The CUTLASS FP8 terms of the device model (roofline/cutlassfp8.go) are
// what a fit of the relative error on AIConfigurator's vLLM 0.24.0 fp8
// gemm rows (CutlassFP8ScaledMMLinearKernel) gives, per device, with every
// fifth row held out: Nelder-Mead over the K step, the MMA roof, the HBM
// roof and (where the device records its L2) the L2 gain, from round
// values (0.1 us, 0.75, 0.85, 2), the floor held at the device's cuBLAS
// one, and the collector's dynamic quantization (roofline.FP8QuantPath:
// floor, bytes, per token) refitted by least squares at each step. The
// fit reproduces every stored constant within 3%, and held out the rows
// are within issue 31's targets (10% MAPE on H100, 15% on B200).
func TestCutlassFP8Refit(t *testing.T) {
	for _, tc := range []struct {
		device, arch string
		maxHeld      float64
	}{
		{"h100", spec.ArchHopper, 10},
		{"b200", spec.ArchBlackwell, 15},
	} {
		dev, err := spec.LookupDevice(tc.device)
		if err != nil {
			t.Fatal(err)
		}
		d := roofline.NewDevice(dev)
		rows := cutlassFP8Rows(t, filepath.Join("..", "testdata", "aiconfigurator-0.24", tc.device+"_sxm"))
		if len(rows) < 5000 {
			t.Fatalf("%s: %d CUTLASS fp8 rows", tc.device, len(rows))
		}
		q, ok := roofline.LookupFP8QuantPath("0.24.0", "fp8", roofline.KernelCutlassFP8, tc.device)
		if !ok {
			t.Fatalf("%s: no quantization path", tc.device)
		}
		stored, ok := roofline.CutlassFP8Of(tc.arch)
		if !ok {
			t.Fatalf("%s: no CUTLASS FP8 terms", tc.arch)
		}
		warm := dev.L2MB > 0
		set := func(p []float64) roofline.CutlassFP8 {
			c := roofline.CutlassFP8{FloorUs: stored.FloorUs, IterUs: math.Abs(p[0]), MMAEff: math.Abs(p[1]), MemEff: math.Abs(p[2])}
			if warm {
				c.L2Gain = math.Abs(p[3])
			}
			return c
		}
		p, step := []float64{0.1, 0.75, 0.85, 2}, []float64{0.02, 0.05, 0.05, 0.3}
		if !warm {
			p, step = p[:3], step[:3]
		}
		for _, iters := range []int{300, 200} { // a restart from the best point
			p = nelderMead(func(p []float64) float64 {
				_, m, _ := cutlassFP8Fit(rows, d, set(p), q, true, false)
				return m
			}, p, step, iters)
		}
		c := set(p)
		qf, _, _ := cutlassFP8Fit(rows, d, c, q, true, false)
		got := []float64{c.IterUs, c.MMAEff, c.MemEff, c.L2Gain, qf.FloorUs, qf.BytesPerElem, qf.TokenUs}
		want := []float64{stored.IterUs, stored.MMAEff, stored.MemEff, stored.L2Gain, q.FloorUs, q.BytesPerElem, q.TokenUs}
		params := "K step us, MMA eff, HBM eff, L2 gain, quant floor us, quant bytes/element, quant us/token"
		t.Logf("%s: refit (%s) %.4g; stored %.4g", tc.device, params, got, want)
		for i := range got {
			if math.Abs(got[i]-want[i]) > 0.03*math.Abs(want[i]) {
				t.Errorf("%s: parameter %d (%s) refits to %.4g, stored %.4g", tc.device, i, params, got[i], want[i])
			}
		}
		_, fm, fb := cutlassFP8Fit(rows, d, stored, q, false, false)
		_, hm, hb := cutlassFP8Fit(rows, d, stored, q, false, true)
		t.Logf("%s 0.24.0 CUTLASS fp8 (%d rows): fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%)", tc.device, len(rows), fm, fb, hm, hb)
		if hm > tc.maxHeld {
			t.Errorf("%s: held-out MAPE %.1f%% over %.0f%%", tc.device, hm, tc.maxHeld)
		}
	}
}
