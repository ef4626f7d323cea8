package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// fa4Row is an FA4 row and whether it is held out (every fifth row of its
// table, file order).
type fa4Row struct {
	attnRefitRow
	held bool
}

// fa4MAPE is the MAPE and bias (percent) of device d with FA4 terms f over
// the rows that are held out or not.
func fa4MAPE(rows []fa4Row, d *roofline.Device, f roofline.FA4, held bool) (mape, bias float64) {
	dev := *d
	dev.Curves.FA4 = &f
	r := roofline.Roofline{Device: &dev, Compiled: true}
	n := 0
	for i := range rows {
		if rows[i].held != held {
			continue
		}
		e := (AttentionRowMs(r, &rows[i].row, rows[i].eb) - rows[i].row.LatencyMs) / rows[i].row.LatencyMs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// fa4Params are the FA4 terms the refit moves, in order.
const fa4Params = "CTA us, scan us, block us, HBM eff, iteration us, combine us, combine CTA us, token us"

func fa4Get(f roofline.FA4) []float64 {
	return []float64{f.CTAUs, f.ScanUs, f.BlockUs, f.MemEff, f.IterUs, f.CombineUs, f.CombineCTAUs, f.TokenUs}
}

func fa4Set(f *roofline.FA4, p []float64) {
	q := make([]float64, len(p))
	for i, v := range p {
		q[i] = math.Abs(v)
	}
	f.CTAUs, f.ScanUs, f.BlockUs, f.MemEff, f.IterUs, f.CombineUs, f.CombineCTAUs, f.TokenUs = q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]
}

// The FA4 terms of Hopper's device model (roofline/fa4.go) are what a
// Nelder-Mead fit of the relative error on AIConfigurator's vLLM 0.24.0
// H100 FA4 rows (kernel source vllm_flash_attn_fa4, head dim 512, BF16 KV;
// generation and context rows together, one set of terms) gives with every
// fifth row held out, from a start 20% off the stored terms. The fit
// reproduces every stored constant within 3%, and on the held-out rows the
// device model prices each table within maxHeld.
func TestFA4AttentionRefit(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	d := roofline.NewDevice(h100)
	dir := filepath.Join("..", "testdata", "aiconfigurator-0.24", "h100_sxm")
	tables := map[string][]fa4Row{}
	var all []fa4Row
	for _, name := range []string{"generation_attention_perf", "context_attention_perf"} {
		for _, r := range fa3Rows(t, dir, name, "0.24.0") {
			if r.row.KernelSource == "vllm_flash_attn_fa4" {
				tables[name] = append(tables[name], fa4Row{r, len(tables[name])%5 == 4})
			}
		}
		if len(tables[name]) < 500 {
			t.Fatalf("%s: %d FA4 rows", name, len(tables[name]))
		}
		all = append(all, tables[name]...)
	}
	stored := *d.Curves.FA4
	start := fa4Get(stored)
	step := make([]float64, len(start))
	for i := range start {
		step[i] = 0.2 * start[i]
		start[i] *= 1.2
	}
	fit := nelderMead(func(p []float64) float64 {
		f := stored
		fa4Set(&f, p)
		m, _ := fa4MAPE(all, d, f, false)
		return m
	}, start, step, 1500)
	refit := stored
	fa4Set(&refit, fit)
	got, want := fa4Get(refit), fa4Get(stored)
	t.Logf("refit (%s) %.4g; stored %.4g", fa4Params, got, want)
	for i := range got {
		if math.Abs(got[i]/want[i]-1) > 0.03 {
			t.Errorf("parameter %d (%s) refits to %.4g, stored %.4g", i, fa4Params, got[i], want[i])
		}
	}
	const maxHeld = 10 // issue 31's bound for the H100 tables, percent
	for _, name := range []string{"generation_attention_perf", "context_attention_perf"} {
		fm, fb := fa4MAPE(tables[name], d, stored, false)
		hm, hb := fa4MAPE(tables[name], d, stored, true)
		t.Logf("%s: fitted %.1f%% (%+.1f%%), held out %.1f%% (%+.1f%%)", name, fm, fb, hm, hb)
		if hm > maxHeld {
			t.Errorf("%s: held-out MAPE %.1f%% over %d%%", name, hm, maxHeld)
		}
	}
}

// The simulator passes FA4 the split bound vLLM passes: under full CUDA
// graphs, 32 splits a (sequence, KV head) for a step within the capture
// size, so a decode of 256 sequences of a head-dim-512 layer costs several
// times its eager or piecewise price, where vLLM passes none; a head-dim-128
// layer (FA3) is priced alike in every mode.
func TestFA4ServedSplitBound(t *testing.T) {
	d, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	base, err := spec.LookupModel("llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	b := BatchShape{Tokens: 256, Seqs: 256}
	for i := 0; i < 256; i++ {
		b.DecodeContexts = append(b.DecodeContexts, 100)
	}
	attn := func(m *spec.Model, mode string) float64 {
		cm, err := NewOpCostModel(OpCostConfig{Model: m, Layout: spec.Layout{TP: 1}, Device: d, Limits: testLimits, ExecutionMode: mode, VLLMVersion: "0.24.0"})
		if err != nil {
			t.Fatal(err)
		}
		var c StepCost
		cm.StageCost(&b, 0, &c)
		return c.Ms[CompAttention]
	}
	wide := *base
	wide.HeadDim = 512
	full := attn(&wide, runresult.ExecFullAndPiecewise)
	for _, mode := range []string{runresult.ExecEager, runresult.ExecPiecewise} {
		got := attn(&wide, mode)
		t.Logf("head dim 512, 256 sequences over 100 tokens: attention %.2f ms a step under full CUDA graphs, %.2f ms %s", full, got, mode)
		if full < 3*got {
			t.Errorf("head dim 512: attention %.2f ms a step under full CUDA graphs, %.2f ms %s: want over 3x", full, got, mode)
		}
	}
	if f, e := attn(base, runresult.ExecFullAndPiecewise), attn(base, runresult.ExecEager); f != e {
		t.Errorf("head dim 128: attention %.3f ms under full CUDA graphs, %.3f ms eager: want equal", f, e)
	}
}
