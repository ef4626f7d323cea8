package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// bf16GEMMRows reads the BF16 rows of the gemm table (vLLM version v) of
// the database at dir.
func bf16GEMMRows(t *testing.T, dir, v string) []kerneldb.GEMMRow {
	t.Helper()
	db, err := kerneldb.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Resolve(kerneldb.TableGEMM, v)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kerneldb.ReadTable(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []kerneldb.GEMMRow
	for _, g := range tb.GEMM {
		if g.Dtype == "bfloat16" {
			rows = append(rows, g)
		}
	}
	return rows
}

// cuBLASMAPE is the MAPE and bias (percent) of device d with cuBLAS terms c
// over the rows that are held out (every fifth, file order) or not, or
// over all rows (all set), each priced as RooflineVsTable prices it.
func cuBLASMAPE(rows []kerneldb.GEMMRow, d *roofline.Device, c roofline.CuBLAS, held, all bool) (mape, bias float64) {
	dev := *d
	dev.Curves.CuBLAS = &c
	r := roofline.Roofline{Device: &dev, Compiled: true}
	n := 0
	for i := range rows {
		g := &rows[i]
		if !all && (i%5 == 4) != held {
			continue
		}
		e := (BF16GEMMRowMs(r, g) - g.LatencyMs) / g.LatencyMs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// The cuBLAS terms of the device model (roofline/cublas.go) are what a
// two-stage fit of the relative error on AIConfigurator's BF16 gemm rows
// gives with every fifth row held out: Hopper's on the vLLM 0.14.0 H100
// rows, Blackwell's on the vLLM 0.24.0 B200 rows, Ampere's on the vLLM
// 0.14.0 A100 rows (the device's own SMs, peak and HBM from its record):
//  1. the floor and the K loop's step on the rows the loop alone sets
//     (1-128 tokens, 32-256 columns, K 512-3,584: one or two thread blocks
//     walking K, nothing else near);
//  2. with those held, Nelder-Mead over the MMA roof, the HBM roof, the
//     thread block's stream rate, the split-K reduction and, where the
//     device records its L2, the L2 gain of weights the collector's graph
//     left there (BF16GEMMRowMs), from round values (0.85, 0.86, 200 GB/s,
//     2.3 us, 2); for Ampere also a wave's fill and epilogue (from 2 us)
//     and, from the first stage's values, the floor and the K step, and no
//     L2 gain (it fits below 1 there, which no cache does).
//
// The fit reproduces every stored constant within 3%; held out, the rows
// are within issue 31's targets (10% on H100, 15% on B200; the A100, a
// check without a target, within 15%), and so are
// all of H100's vLLM 0.24.0 rows (a later PyTorch and cuBLAS, the same
// F.linear), none of them fitted.
func TestCuBLASGEMMRefit(t *testing.T) {
	for _, tc := range []struct {
		device, dir, version string
		minRows              int
		maxHeld              float64
		laterDir             string // a later table of the device, all held out
		wave                 bool   // fit CuBLAS.WaveUs too
	}{
		{"h100", "aiconfigurator/h100_sxm", "0.14.0", 9000, 10, "aiconfigurator-0.24/h100_sxm", false},
		{"b200", "aiconfigurator-0.24/b200_sxm", "0.24.0", 35000, 15, "", false},
		{"a100", "aiconfigurator/a100_sxm", "0.14.0", 9000, 15, "", true},
	} {
		dev, err := spec.LookupDevice(tc.device)
		if err != nil {
			t.Fatal(err)
		}
		d := roofline.NewDevice(dev)
		stored := *d.Curves.CuBLAS
		rows := bf16GEMMRows(t, filepath.Join("..", "testdata", tc.dir), tc.version)
		if len(rows) < tc.minRows {
			t.Fatalf("%s %s: %d BF16 gemm rows, want at least %d", tc.device, tc.version, len(rows), tc.minRows)
		}
		var loop []kerneldb.GEMMRow
		for i, g := range rows {
			if i%5 != 4 && g.M <= 128 && g.N <= 256 && g.K >= 512 && g.K <= 3584 {
				loop = append(loop, g)
			}
		}
		floorIter := nelderMead(func(p []float64) float64 {
			s := 0.0
			for _, g := range loop {
				us := p[0] + math.Ceil(float64(g.K*2)/128)*p[1]
				s += math.Abs(us-g.LatencyMs*1e3) / (g.LatencyMs * 1e3)
			}
			return s
		}, []float64{2.5, 0.07}, []float64{0.2, 0.01}, 400)
		refit := stored
		refit.FloorUs, refit.IterUs = floorIter[0], floorIter[1]
		warm := dev.L2MB > 0 && !tc.wave
		set := func(c *roofline.CuBLAS, p []float64) {
			c.MMAEff, c.MemEff, c.CTAGBps, c.SplitKUs = math.Abs(p[0]), math.Abs(p[1]), math.Abs(p[2]), math.Abs(p[3])
			if warm {
				c.L2Gain = math.Abs(p[4])
			}
			if tc.wave {
				c.WaveUs = math.Abs(p[len(p)-3])
				c.FloorUs, c.IterUs = math.Abs(p[len(p)-2]), math.Abs(p[len(p)-1])
			}
		}
		start, step := []float64{0.85, 0.86, 200, 2.3, 2}, []float64{0.05, 0.05, 30, 0.5, 0.3}
		if !warm {
			start, step = start[:4], step[:4]
		}
		if tc.wave {
			start, step = append(start, 2, refit.FloorUs, refit.IterUs), append(step, 0.5, 0.5, 0.01)
		}
		p := nelderMead(func(p []float64) float64 {
			c := refit
			set(&c, p)
			m, _ := cuBLASMAPE(rows, d, c, false, false)
			return m
		}, start, step, 300)
		set(&refit, p)
		got := []float64{refit.FloorUs, refit.IterUs, refit.MMAEff, refit.MemEff, refit.CTAGBps, refit.SplitKUs}
		want := []float64{stored.FloorUs, stored.IterUs, stored.MMAEff, stored.MemEff, stored.CTAGBps, stored.SplitKUs}
		params := "floor us, K step us, MMA eff, HBM eff, block GB/s, split-K us"
		if warm {
			got, want, params = append(got, refit.L2Gain), append(want, stored.L2Gain), params+", L2 gain"
		}
		if tc.wave {
			got, want, params = append(got, refit.WaveUs), append(want, stored.WaveUs), params+", wave us"
		}
		t.Logf("%s: refit (%s) %.4g on %d loop rows; stored %.4g", tc.device, params, got, len(loop), want)
		for i := range got {
			if math.Abs(got[i]/want[i]-1) > 0.03 {
				t.Errorf("%s: parameter %d (%s) refits to %.4g, stored %.4g", tc.device, i, params, got[i], want[i])
			}
		}
		fm, fb := cuBLASMAPE(rows, d, stored, false, false)
		hm, hb := cuBLASMAPE(rows, d, stored, true, false)
		t.Logf("%s %s: fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%)", tc.device, tc.version, fm, fb, hm, hb)
		if hm > tc.maxHeld {
			t.Errorf("%s %s held-out MAPE %.1f%% over %.0f%%", tc.device, tc.version, hm, tc.maxHeld)
		}
		if tc.laterDir == "" {
			continue
		}
		later := bf16GEMMRows(t, filepath.Join("..", "testdata", tc.laterDir), "0.24.0")
		lm, lb := cuBLASMAPE(later, d, stored, false, true)
		t.Logf("%s 0.24.0 (held out, %d rows): %.1f%% (%+.1f%%)", tc.device, len(later), lm, lb)
		if lm > tc.maxHeld {
			t.Errorf("%s 0.24.0 MAPE %.1f%% over %.0f%%", tc.device, lm, tc.maxHeld)
		}
	}
}
