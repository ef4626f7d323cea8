package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// customARMAPE is the MAPE and bias (percent) of device d with custom
// all-reduce terms c over the rows that are held out (every fifth, file
// order) or not.
func customARMAPE(rows []kerneldb.AllReduceRow, d *roofline.Device, c roofline.CustomAllReduce, held bool) (mape, bias float64) {
	dev := *d
	dev.Curves.CustomAllReduce = c
	r := roofline.Roofline{Device: &dev, Compiled: true, CollectivesAligned: true}
	n := 0
	for i, a := range rows {
		if (i%5 == 4) != held {
			continue
		}
		o := spec.Op{Name: spec.OpAllReduce, Family: spec.FamilyCollective, Kernels: 1, Workers: a.GPUs, ElemBytes: 2}
		e := (r.KernelMs(&o, []float64{2 * float64(a.MessageSize)}) - a.LatencyMs) / a.LatencyMs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// The custom all-reduce's kernel terms (roofline/customar.go) are what a
// Nelder-Mead fit of the relative error on AIConfigurator's
// custom_allreduce_perf rows (CUDA graph, BF16) that vLLM runs as its
// custom kernel (and, on Blackwell, on symmetric memory) gives with every
// fifth row held out, from the earlier guess (8 us, 0.7 of NVLink): each
// stored constant within 3% of the refit, and the held-out rows within
// issue 31's target for the device (10% H100, 15% B200; the A100, a
// check without a target, 15%). Hopper: vLLM
// 0.14.0 H100 rows under 8 MiB; Blackwell: vLLM 0.24.0 B200 rows under
// the symmetric-memory limits; Ampere: vLLM 0.14.0 A100 rows under 8 MiB.
func TestCustomAllReduceRefit(t *testing.T) {
	for _, tc := range []struct {
		device, dir, version string
		maxHeld              float64
		params               int // the leading terms fitted: 4 (custom kernel) or 6 (and symmetric memory)
	}{
		{"h100", filepath.Join("..", "testdata", "aiconfigurator", "h100_sxm"), "0.14.0", 10, 4},
		{"b200", filepath.Join("..", "testdata", "aiconfigurator-0.24", "b200_sxm"), "0.24.0", 15, 6},
		{"a100", filepath.Join("..", "testdata", "aiconfigurator", "a100_sxm"), "0.14.0", 15, 4},
	} {
		t.Run(tc.device, func(t *testing.T) {
			sd, err := spec.LookupDevice(tc.device)
			if err != nil {
				t.Fatal(err)
			}
			d := roofline.NewDevice(sd)
			stored := d.Curves.CustomAllReduce
			db, err := kerneldb.Open(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := db.Resolve("custom_allreduce_perf", tc.version)
			if err != nil {
				t.Fatal(err)
			}
			tb, err := kerneldb.ReadTable(res.Path)
			if err != nil {
				t.Fatal(err)
			}
			var rows []kerneldb.AllReduceRow
			for _, a := range tb.AllReduce {
				if a.Graph && a.Dtype == "bfloat16" && stored.Takes(a.GPUs, 2*float64(a.MessageSize)) {
					rows = append(rows, a)
				}
			}
			if len(rows) < 40 {
				t.Fatalf("%d custom all-reduce rows", len(rows))
			}
			get := func(c roofline.CustomAllReduce) []float64 {
				return []float64{c.OneShotFloorUs, c.OneShotEff, c.TwoShotFloorUs, c.TwoShotEff, c.SymmMemFloorUs, c.SymmMemEff}[:tc.params]
			}
			set := func(p []float64) roofline.CustomAllReduce {
				c := stored
				q := make([]float64, 6)
				for i := range p {
					q[i] = math.Abs(p[i])
				}
				c.OneShotFloorUs, c.OneShotEff, c.TwoShotFloorUs, c.TwoShotEff = q[0], q[1], q[2], q[3]
				if tc.params > 4 {
					c.SymmMemFloorUs, c.SymmMemEff = q[4], q[5]
				}
				return c
			}
			start := []float64{8, 0.7, 8, 0.7, 8, 0.7}[:tc.params]
			step := []float64{1, 0.1, 1, 0.1, 1, 0.1}[:tc.params]
			fit := set(nelderMead(func(p []float64) float64 {
				m, _ := customARMAPE(rows, d, set(p), false)
				return m
			}, start, step, 3000))
			got, want := get(fit), get(stored)
			t.Logf("refit (one-stage floor us, NVLink share, two-stage floor us, share[, symmetric-memory floor us, share]) %.4g; stored %.4g", got, want)
			for i := range got {
				if math.Abs(got[i]/want[i]-1) > 0.03 {
					t.Errorf("parameter %d refits to %.4g, stored %.4g", i, got[i], want[i])
				}
			}
			fm, fb := customARMAPE(rows, d, stored, false)
			hm, hb := customARMAPE(rows, d, stored, true)
			t.Logf("%d rows: fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%)", len(rows), fm, fb, hm, hb)
			if hm > tc.maxHeld {
				t.Errorf("held-out MAPE %.1f%% over %.0f%%", hm, tc.maxHeld)
			}
		})
	}
}
