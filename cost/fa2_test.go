package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// fa2MAPE is the MAPE and bias (percent) of device d with FA2 terms f over
// the rows that are held out (every fifth, file order) or not, each priced
// as RooflineVsTable prices it (the row's vllm_flash_attn names FA2 on
// Ampere).
func fa2MAPE(rows []attnRefitRow, d *roofline.Device, f roofline.FA2, held bool) (mape, bias float64) {
	dev := *d
	dev.Curves.FA2 = &f
	r := roofline.Roofline{Device: &dev, Compiled: true}
	n := 0
	for i := range rows {
		if (i%5 == 4) != held {
			continue
		}
		e := (AttentionRowMs(r, &rows[i].row, rows[i].eb) - rows[i].row.LatencyMs) / rows[i].row.LatencyMs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// The FA2 terms of the device model (roofline/fa2.go) are what a fit of
// the relative error on AIConfigurator's vLLM 0.14.0 A100 SXM attention
// rows gives with every fifth row (file order) of each table held out:
// Nelder-Mead from round values, first the HBM efficiency and the decode
// terms on the generation rows, then, with those held, the prefill terms
// on the context rows (whose one-token rows run as a decode does). The
// fit reproduces every stored constant within 3%, and the held-out rows
// of each table stay within the bound: the A100 is a check without a
// target in issue 31, and its terms are fitted on four rows in five of
// its own table.
func TestFA2AttentionRefit(t *testing.T) {
	dev, err := spec.LookupDevice("a100")
	if err != nil {
		t.Fatal(err)
	}
	d := roofline.NewDevice(dev)
	if d.Curves.FA2 == nil {
		t.Fatal("a100: no FA2 terms")
	}
	stored := *d.Curves.FA2
	dir := filepath.Join("..", "testdata", "aiconfigurator", "a100_sxm")
	gen := fa3Rows(t, dir, kerneldb.TableGenAttention, "0.14.0")
	ctx := fa3Rows(t, dir, kerneldb.TableContextAttention, "0.14.0")
	if len(gen) < 5000 || len(ctx) < 5000 {
		t.Fatalf("a100 0.14.0: %d generation and %d context rows, want at least 5,000 each", len(gen), len(ctx))
	}
	refit := stored
	setDecode := func(f *roofline.FA2, p []float64) {
		f.MemEff, f.DecodeCTAUs, f.DecodeBlockUs, f.CombineUs = math.Abs(p[0]), math.Abs(p[1]), math.Abs(p[2]), math.Abs(p[3])
		f.DecodeGQAUs, f.DecodeSwapUs, f.CombineSplitUs = math.Abs(p[4]), math.Abs(p[5]), math.Abs(p[6])
	}
	p := nelderMead(func(p []float64) float64 {
		f := refit
		setDecode(&f, p)
		m, _ := fa2MAPE(gen, d, f, false)
		return m
	}, []float64{0.85, 4, 2, 3, 1.5, 6, 0.2}, []float64{0.05, 1, 0.5, 1, 0.5, 1, 0.05}, 800)
	setDecode(&refit, p)
	p = nelderMead(func(p []float64) float64 {
		f := refit
		f.PrefillFloorUs, f.PrefillIterUs, f.PrefillCTAUs, f.PrefillTail = math.Abs(p[0]), math.Abs(p[1]), math.Abs(p[2]), math.Abs(p[3])
		m, _ := fa2MAPE(ctx, d, f, false)
		return m
	}, []float64{8, 2, 3, 1}, []float64{2, 0.5, 1, 0.3}, 400)
	refit.PrefillFloorUs, refit.PrefillIterUs, refit.PrefillCTAUs, refit.PrefillTail = math.Abs(p[0]), math.Abs(p[1]), math.Abs(p[2]), math.Abs(p[3])
	params := "HBM eff, decode CTA us, block us, combine us, GQA us, swap us, combine us a split, prefill floor us, iter us, CTA us, tail"
	got := []float64{refit.MemEff, refit.DecodeCTAUs, refit.DecodeBlockUs, refit.CombineUs, refit.DecodeGQAUs, refit.DecodeSwapUs, refit.CombineSplitUs, refit.PrefillFloorUs, refit.PrefillIterUs, refit.PrefillCTAUs, refit.PrefillTail}
	want := []float64{stored.MemEff, stored.DecodeCTAUs, stored.DecodeBlockUs, stored.CombineUs, stored.DecodeGQAUs, stored.DecodeSwapUs, stored.CombineSplitUs, stored.PrefillFloorUs, stored.PrefillIterUs, stored.PrefillCTAUs, stored.PrefillTail}
	t.Logf("a100: refit (%s) %.4g; stored %.4g", params, got, want)
	for i := range got {
		if math.Abs(got[i]/want[i]-1) > 0.03 {
			t.Errorf("a100: parameter %d (%s) refits to %.4g, stored %.4g", i, params, got[i], want[i])
		}
	}
	for _, tc := range []struct {
		name    string
		rows    []attnRefitRow
		maxHeld float64
	}{{"generation", gen, 10}, {"context", ctx, 10}} {
		fm, fb := fa2MAPE(tc.rows, d, stored, false)
		hm, hb := fa2MAPE(tc.rows, d, stored, true)
		t.Logf("a100 0.14.0 %s: fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%)", tc.name, fm, fb, hm, hb)
		if hm > tc.maxHeld {
			t.Errorf("a100 0.14.0 %s held-out MAPE %.1f%% over %.0f%%", tc.name, hm, tc.maxHeld)
		}
	}
}
