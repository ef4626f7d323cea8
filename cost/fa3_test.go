package cost

import (
	"math"
	"path/filepath"
	"sort"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// attnRefitRow is one full-attention row of an AIConfigurator attention
// table with its KV element bytes.
type attnRefitRow struct {
	row kerneldb.AttentionRow
	eb  int
}

// fa3Rows reads the BF16-compute, full-attention rows of attention table
// name (vLLM version v) from the database at dir.
func fa3Rows(t *testing.T, dir, name, v string) []attnRefitRow {
	t.Helper()
	db, err := kerneldb.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Resolve(name, v)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kerneldb.ReadTable(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []attnRefitRow
	for _, a := range tb.Attention {
		if a.WindowSize > 0 || a.AttnDtype != "bfloat16" {
			continue
		}
		switch a.KVCacheDtype {
		case "bfloat16":
			rows = append(rows, attnRefitRow{a, 2})
		case "fp8":
			rows = append(rows, attnRefitRow{a, 1})
		}
	}
	return rows
}

// fa3MAPE is the MAPE and bias (percent) of device d with FA3 terms f over
// the rows of KV element bytes eb (0: all) that are held out (every fifth,
// file order) or not.
func fa3MAPE(rows []attnRefitRow, d *roofline.Device, f roofline.FA3, eb int, held bool) (mape, bias float64) {
	dev := *d
	f.ByKernel = nil // f prices every row
	dev.Curves.FA3 = &f
	r := roofline.Roofline{Device: &dev, Compiled: true}
	n := 0
	for i := range rows {
		if (i%5 == 4) != held || (eb != 0 && rows[i].eb != eb) {
			continue
		}
		e := (AttentionRowMs(r, &rows[i].row, rows[i].eb) - rows[i].row.LatencyMs) / rows[i].row.LatencyMs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// nelderMead minimises f from x0 (initial steps step) for iters
// iterations: the standard reflection / expansion / contraction / shrink
// simplex.
func nelderMead(f func([]float64) float64, x0, step []float64, iters int) []float64 {
	n := len(x0)
	pts := make([][]float64, n+1)
	vals := make([]float64, n+1)
	for i := range pts {
		pts[i] = append([]float64(nil), x0...)
		if i > 0 {
			pts[i][i-1] += step[i-1]
		}
		vals[i] = f(pts[i])
	}
	at := func(c, p []float64, k float64) []float64 {
		y := make([]float64, n)
		for j := range y {
			y[j] = c[j] + k*(p[j]-c[j])
		}
		return y
	}
	for it := 0; it < iters; it++ {
		idx := make([]int, n+1)
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return vals[idx[a]] < vals[idx[b]] })
		p2, v2 := make([][]float64, n+1), make([]float64, n+1)
		for i, j := range idx {
			p2[i], v2[i] = pts[j], vals[j]
		}
		pts, vals = p2, v2
		c := make([]float64, n)
		for _, p := range pts[:n] {
			for j := range c {
				c[j] += p[j] / float64(n)
			}
		}
		xr := at(c, pts[n], -1)
		fr := f(xr)
		switch {
		case fr < vals[0]:
			if xe := at(c, pts[n], -2); f(xe) < fr {
				pts[n], vals[n] = xe, f(xe)
			} else {
				pts[n], vals[n] = xr, fr
			}
		case fr < vals[n-1]:
			pts[n], vals[n] = xr, fr
		default:
			xc := at(c, pts[n], 0.5)
			if fc := f(xc); fc < vals[n] {
				pts[n], vals[n] = xc, fc
			} else {
				for i := 1; i <= n; i++ {
					pts[i] = at(pts[0], pts[i], 0.5)
					vals[i] = f(pts[i])
				}
			}
		}
	}
	best := 0
	for i := range vals {
		if vals[i] < vals[best] {
			best = i
		}
	}
	return pts[best]
}

// The FA3 terms of Hopper's device model (roofline/fa3.go) are what a
// Nelder-Mead fit of the relative error on AIConfigurator's H100
// attention rows gives with every fifth row held out: vLLM 0.14.0's rows
// (kernel source vllm_flash_attn) for hopperFA3, from a start of the
// pre-FA3 curve (7.4 us floor, 0.85 of HBM), and vLLM 0.24.0's FA3 rows
// (vllm_flash_attn_fa3, head dims 64-256) for the 0.24.0 record, from
// 0.14.0's terms (its decode in two stages: the shared terms, then the
// FP8 kernel's own on the FP8 rows). The fit reproduces every stored constant within 3%, and
// on the held-out rows the device model prices each table and KV dtype
// within the bound stated below (issue 31's 10% where it is met).
func TestFA3AttentionRefit(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	d := roofline.NewDevice(h100)
	abs := func(p []float64) []float64 {
		q := make([]float64, len(p))
		for i, v := range p {
			q[i] = math.Abs(v)
		}
		return q
	}
	decodeSet := func(f *roofline.FA3, p []float64) {
		p = abs(p)
		f.DecodeFloorUs, f.MemEff, f.DecodeStreamGBps, f.DecodeStreamGBpsFP8, f.DecodeCTAUs, f.DecodeBlockUs = p[0], p[1], p[2], p[3], p[4], p[5]
		if len(p) > 6 {
			f.DecodeWideTile, f.DecodeWideTileFP8 = p[6], p[7]
		}
	}
	decodeGet := func(f roofline.FA3) []float64 {
		p := []float64{f.DecodeFloorUs, f.MemEff, f.DecodeStreamGBps, f.DecodeStreamGBpsFP8, f.DecodeCTAUs, f.DecodeBlockUs}
		if f.DecodeWideTile > 0 {
			p = append(p, f.DecodeWideTile, f.DecodeWideTileFP8)
		}
		return p
	}
	// vLLM 0.24.0's decode is fitted in two stages: the shared terms on
	// both KV dtypes' rows, the FP8 rows priced as the 16-bit kernel
	// (withoutFP8Kernel; its FP8 stream rate and wide-tile factor are
	// nuisance terms there), then the FP8 kernel's own terms on the FP8
	// rows over the stored shared terms.
	withoutFP8Kernel := func(f *roofline.FA3) {
		f.FP8Tiles, f.DecodeFloorUsFP8, f.DecodeBlockFP8 = false, 0, 0
	}
	decodeGetShared := func(f roofline.FA3) []float64 {
		return []float64{f.DecodeFloorUs, f.MemEff, f.DecodeStreamGBps, f.DecodeCTAUs, f.DecodeBlockUs, f.DecodeWideTile}
	}
	decodeSetFP8 := func(f *roofline.FA3, p []float64) {
		p = abs(p)
		f.DecodeFloorUsFP8, f.DecodeStreamGBpsFP8, f.DecodeBlockFP8, f.DecodeWideTileFP8 = p[0], p[1], p[2], p[3]
	}
	decodeGetFP8 := func(f roofline.FA3) []float64 {
		return []float64{f.DecodeFloorUsFP8, f.DecodeStreamGBpsFP8, f.DecodeBlockFP8, f.DecodeWideTileFP8}
	}
	// The combine kernel's time (CombineUs) is not refitted: the context
	// rows, with no cached keys, split in 370 of 5,457 rows of a version
	// and pin it loosely (freed, it moves 2.76 -> 1.04 us for 0.03 points
	// of 0.14.0's MAPE), while the simulator's verify passes and short
	// chunks over long cached prefixes split on every step and lean on
	// it. It keeps the value the fit gave with the split rows' own terms
	// (roofline/fa3.go), and the loop below checks that freeing it gains
	// under 0.25 points.
	prefillSet := func(f *roofline.FA3, p []float64) {
		p = abs(p)
		f.PrefillFloorUs, f.PrefillIterUs, f.PrefillIterUsFP8, f.PrefillCTAUs, f.PrefillTail = p[0], p[1], p[2], p[3], p[4]
		if len(p) > 5 {
			f.PrefillCTAUsFP8 = p[5]
		}
	}
	// The context rows in two stages too: the shared terms on the BF16
	// rows (the FP8 iteration and CTA costs in their vector are unused
	// there), then the FP8 kernel's terms on the FP8 rows:
	// its tiles (roofline/fa3fp8.go), iteration, score and CTA costs,
	// per-token work and (0.24.0) its head-dim-256 factor and floor.
	prefillGetShared := func(f roofline.FA3) []float64 {
		return []float64{f.PrefillFloorUs, f.PrefillIterUs, f.PrefillCTAUs, f.PrefillTail}
	}
	// 0.24.0's shared stage also fits the 16-bit kernel's cost a block of
	// scores (its rows span head dims 64-256).
	prefillSetScore := func(f *roofline.FA3, p []float64) {
		prefillSet(f, p[:6])
		f.PrefillScoreUs = math.Abs(p[6])
	}
	prefillGetScore := func(f roofline.FA3) []float64 {
		return append(prefillGetShared(f), f.PrefillScoreUs)
	}
	// The shared stage also fixes the KV-cache write's block loop
	// (roofline/kvcachesave.go), which every row times beside the
	// attention kernel: Hopper's KVCacheSave.BlockUs (0.14.0) and
	// BlockUsFrom024 (0.24.0), the last parameter.
	block014 := func(s *roofline.KVCacheSave) *float64 { return &s.BlockUs }
	block024 := func(s *roofline.KVCacheSave) *float64 { return &s.BlockUsFrom024 }
	const prefillParamsShared = "floor us, iteration us, CTA us, tail, KV-cache write block us (HBM eff: the decode's; combine us held)"
	withoutFP8Prefill := func(f *roofline.FA3) {
		f.PrefillFP8Tiles, f.PrefillTokenKVNsFP8, f.PrefillTokenQNsFP8, f.PrefillScoreUsFP8, f.PrefillWideFP8, f.PrefillFloorUsFP8 = false, 0, 0, 0, 0, 0
	}
	withoutFP8Prefill014 := func(f *roofline.FA3) {
		withoutFP8Prefill(f)
		f.PrefillCTAUsFP8 = 0 // no FP8 CTA term in 0.14.0's shared fit
	}
	prefillSetFP8 := func(f *roofline.FA3, p []float64) {
		p = abs(p)
		f.PrefillIterUsFP8, f.PrefillCTAUsFP8, f.PrefillTokenKVNsFP8, f.PrefillTokenQNsFP8, f.PrefillScoreUsFP8 = p[0], p[1], p[2], p[3], p[4]
		if len(p) > 5 {
			f.PrefillWideFP8, f.PrefillFloorUsFP8 = p[5], p[6]
		}
	}
	prefillGetFP8 := func(f roofline.FA3) []float64 {
		p := []float64{f.PrefillIterUsFP8, f.PrefillCTAUsFP8, f.PrefillTokenKVNsFP8, f.PrefillTokenQNsFP8, f.PrefillScoreUsFP8}
		if f.PrefillWideFP8 > 0 {
			p = append(p, f.PrefillWideFP8, f.PrefillFloorUsFP8)
		}
		return p
	}
	const prefillParamsFP8 = "FP8 iteration us, CTA us, token-KV-head ns, token-query-head ns, score-block us[, head-dim-256 factor, floor us]"
	const decodeParams = "floor us, HBM eff, stream GB/s BF16, FP8, CTA us, block us[, wide tile, FP8]"
	v014 := filepath.Join("..", "testdata", "aiconfigurator", "h100_sxm")
	v024 := filepath.Join("..", "testdata", "aiconfigurator-0.24", "h100_sxm")
	for _, tc := range []struct {
		dir, version, kernel, table string
		maxHeld                     float64               // held-out MAPE bound per KV dtype, percent
		eb                          int                   // the KV element bytes of the rows fitted and checked (0: both)
		base                        func(f *roofline.FA3) // the model the terms are fitted in (nil: the stored one)
		fitBoth                     bool                  // fit on both KV dtypes' rows, check eb's
		// block, when set, names the KV-cache write's block term the last
		// parameter fits.
		block       func(s *roofline.KVCacheSave) *float64
		start, step []float64
		set         func(f *roofline.FA3, p []float64)
		get         func(f roofline.FA3) []float64
		paramsOf    string
	}{
		{
			dir: v014, version: "0.14.0", kernel: "vllm_flash_attn", table: "generation_attention_perf", maxHeld: 10,
			start: []float64{7.4, 0.85, 50, 50, 1, 1}, step: []float64{2, 0.1, 10, 10, 1, 1},
			set: decodeSet, get: decodeGet, paramsOf: decodeParams,
		},
		{
			// BF16 9.6% held out.
			dir: v014, version: "0.14.0", kernel: "vllm_flash_attn", table: "context_attention_perf", maxHeld: 10, eb: 2,
			start: []float64{7.4, 1.5, 1.5, 1, 0.5, 2}, step: []float64{2, 0.3, 0.3, 1, 0.2, 1},
			set: prefillSet, get: prefillGetShared, paramsOf: prefillParamsShared,
			base: withoutFP8Prefill014, block: block014,
		},
		{
			dir: v014, version: "0.14.0", kernel: "vllm_flash_attn", table: "context_attention_perf", maxHeld: 12, eb: 1,
			start: []float64{1.83, 3.23, 0.5, 0.1, 0.1}, step: []float64{0.3, 1, 0.2, 0.1, 0.1},
			set: prefillSetFP8, get: prefillGetFP8, paramsOf: prefillParamsFP8,
		},
		{
			// The shared terms (the held-out bound is the BF16 rows'; the
			// FP8 rows priced as the 16-bit kernel are only reported).
			dir: v024, version: "0.24.0", kernel: "vllm_flash_attn_fa3", table: "generation_attention_perf", maxHeld: 10, eb: 2,
			start: []float64{9.4, 0.885, 58.3, 24.2, 1.75, 1.68, 1, 1}, step: []float64{2, 0.05, 10, 5, 0.5, 0.5, 0.3, 0.3},
			set: decodeSet, get: decodeGetShared, paramsOf: "floor us, HBM eff, stream GB/s, CTA us, block us, wide tile",
			base: withoutFP8Kernel, fitBoth: true,
		},
		{
			// FP8 caches: FA3's 1-byte tiles (roofline/fa3fp8.go), its
			// own floor, stream rate and block costs.
			dir: v024, version: "0.24.0", kernel: "vllm_flash_attn_fa3", table: "generation_attention_perf", maxHeld: 10, eb: 1,
			start: []float64{9.4, 24.2, 1, 1}, step: []float64{2, 5, 0.3, 0.3},
			set: decodeSetFP8, get: decodeGetFP8, paramsOf: "FP8 floor us, stream GB/s, block, wide tile",
		},
		{
			dir: v024, version: "0.24.0", kernel: "vllm_flash_attn_fa3", table: "context_attention_perf", maxHeld: 10, eb: 2,
			start: []float64{5.1, 1.62, 1.83, 3.23, 0.86, 3.23, 0.2, 2}, step: []float64{2, 0.3, 0.3, 1, 0.2, 1, 0.2, 1},
			set: prefillSetScore, get: prefillGetScore, paramsOf: "floor us, iteration us, CTA us, tail, score-block us, KV-cache write block us (HBM eff: the decode's; combine us held)",
			base: withoutFP8Prefill, block: block024,
		},
		{
			dir: v024, version: "0.24.0", kernel: "vllm_flash_attn_fa3", table: "context_attention_perf", maxHeld: 10, eb: 1,
			start: []float64{1.83, 3.23, 0.5, 0.1, 0.1, 1, 7.6}, step: []float64{0.3, 1, 0.2, 0.1, 0.1, 0.3, 2},
			set: prefillSetFP8, get: prefillGetFP8, paramsOf: prefillParamsFP8,
		},
	} {
		name := tc.table + " (" + tc.version + ")"
		var rows []attnRefitRow
		for _, r := range fa3Rows(t, tc.dir, tc.table, tc.version) {
			if r.row.KernelSource == tc.kernel {
				rows = append(rows, r)
			}
		}
		if len(rows) < 1000 {
			t.Fatalf("%s: %d rows of %s", name, len(rows), tc.kernel)
		}
		stored := *d.Curves.FA3
		if g := stored.ByKernel[roofline.AttentionKernel(tc.kernel)]; g != nil {
			stored = *g
		}
		if tc.base != nil {
			tc.base(&stored)
		}
		// apply sets the terms p on f and, with tc.block, the KV-cache
		// write's block term on dev.
		apply := func(dev *roofline.Device, f *roofline.FA3, p []float64) {
			if tc.block != nil {
				s := *dev.Curves.KVCacheSave
				*tc.block(&s) = math.Abs(p[len(p)-1])
				dev.Curves.KVCacheSave = &s
				p = p[:len(p)-1]
			}
			tc.set(f, p)
		}
		values := func(dev *roofline.Device, f roofline.FA3) []float64 {
			v := tc.get(f)
			if tc.block != nil {
				v = append(v, *tc.block(dev.Curves.KVCacheSave))
			}
			return v
		}
		fit := nelderMead(func(p []float64) float64 {
			f, dev := stored, *d
			apply(&dev, &f, p)
			eb := tc.eb
			if tc.fitBoth {
				eb = 0
			}
			m, _ := fa3MAPE(rows, &dev, f, eb, false)
			return m
		}, tc.start, tc.step, 600)
		refit, refitDev := stored, *d
		apply(&refitDev, &refit, fit)
		got, want := values(&refitDev, refit), values(d, stored)
		t.Logf("%s: refit (%s) %.4g; stored %.4g", name, tc.paramsOf, got, want)
		for i := range got {
			if math.Abs(got[i]/want[i]-1) > 0.03 {
				t.Errorf("%s: parameter %d (%s) refits to %.4g, stored %.4g", name, i, tc.paramsOf, got[i], want[i])
			}
		}
		if tc.block != nil {
			// CombineUs held: freeing it from the stored terms gains
			// under 0.25 points of MAPE on the fitted rows.
			base, _ := fa3MAPE(rows, d, stored, 0, false)
			free := nelderMead(func(p []float64) float64 {
				f := stored
				f.CombineUs = math.Abs(p[0])
				m, _ := fa3MAPE(rows, d, f, 0, false)
				return m
			}, []float64{stored.CombineUs}, []float64{0.5}, 60)
			f := stored
			f.CombineUs = math.Abs(free[0])
			m, _ := fa3MAPE(rows, d, f, 0, false)
			t.Logf("%s: combine us %.3g -> %.3g frees %.2f points of MAPE", name, stored.CombineUs, f.CombineUs, base-m)
			if base-m > 0.25 {
				t.Errorf("%s: freeing CombineUs (%.3g -> %.3g) gains %.2f points of MAPE: refit it", name, stored.CombineUs, f.CombineUs, base-m)
			}
		}
		for _, eb := range []int{2, 1} {
			if tc.eb != 0 && eb != tc.eb {
				continue
			}
			fm, fb := fa3MAPE(rows, d, stored, eb, false)
			hm, hb := fa3MAPE(rows, d, stored, eb, true)
			t.Logf("%s KV %d-byte: fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%)", name, eb, fm, fb, hm, hb)
			if hm > tc.maxHeld {
				t.Errorf("%s KV %d-byte: held-out MAPE %.1f%% over %.1f%%", name, eb, hm, tc.maxHeld)
			}
		}
	}
}
