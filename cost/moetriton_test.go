package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// tritonMoERows reads the balanced moe rows of dtype of AIConfigurator's
// vLLM 0.14.0 H100 table in testdata.
func tritonMoERows(t *testing.T, dtype string) []kerneldb.MoERow {
	t.Helper()
	db, err := kerneldb.Open(filepath.Join("..", "testdata", "aiconfigurator", "h100_sxm"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Resolve(kerneldb.TableMoE, "0.14.0")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := kerneldb.ReadTable(res.Path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []kerneldb.MoERow
	for _, m := range tb.MoE {
		if m.Distribution == "balanced" && m.Dtype == dtype {
			rows = append(rows, m)
		}
	}
	return rows
}

// tritonMoEMAPE is the MAPE and bias (percent) of device d with fused-MoE
// terms s over the rows held out (every fifth, file order) or not.
func tritonMoEMAPE(rows []kerneldb.MoERow, d *roofline.Device, s roofline.TritonMoESet, held bool) (mape, bias float64) {
	dev := *d
	dev.Curves.TritonMoE = &s
	r := roofline.Roofline{Device: &dev, Compiled: true, CollectivesAligned: true}
	n := 0
	for i := range rows {
		if (i%5 == 4) != held {
			continue
		}
		e := (MoERowMs(r, &rows[i]) - rows[i].LatencyMs) / rows[i].LatencyMs * 100
		mape += math.Abs(e)
		bias += e
		n++
	}
	return mape / float64(n), bias / float64(n)
}

// tritonMoEParams are the fitted terms of one weight format's record (and,
// for BF16, the alignment's per-pair time) as a vector, the tile configs
// its rows run only.
type tritonMoEParams struct {
	dtype   string
	tiles   []int // roofline tile configs the rows run
	align   bool
	quant   bool
	record  func(s *roofline.TritonMoESet) *roofline.TritonMoE
	maxHeld float64
}

func (p tritonMoEParams) get(s roofline.TritonMoESet) []float64 {
	m := p.record(&s)
	v := []float64{m.FloorUs, m.MemEff, m.ZeroRows, m.EltwiseEff, m.Norm, m.ProgramUs}
	for _, c := range p.tiles {
		v = append(v, m.Tiles[c].OperandGBpsPerSM, m.Tiles[c].MMAEff)
	}
	if p.quant {
		v = append(v, m.QuantEff, m.QuantFloorUs)
	}
	if p.align {
		v = append(v, s.AlignPairUs)
	}
	return v
}

func (p tritonMoEParams) set(s *roofline.TritonMoESet, v []float64) {
	q := make([]float64, len(v))
	for i := range v {
		q[i] = math.Abs(v[i])
	}
	m := p.record(s)
	m.FloorUs, m.MemEff, m.ZeroRows, m.EltwiseEff, m.Norm, m.ProgramUs = q[0], q[1], q[2], q[3], math.Max(q[4], 0.5), q[5]
	q = q[6:]
	for _, c := range p.tiles {
		m.Tiles[c].OperandGBpsPerSM, m.Tiles[c].MMAEff = q[0], math.Min(q[1], 1)
		q = q[2:]
	}
	if p.quant {
		m.QuantEff, m.QuantFloorUs = q[0], q[1]
		q = q[2:]
	}
	if p.align {
		s.AlignPairUs = q[0]
	}
}

// The fused_experts terms of Hopper's device model (roofline/moetriton.go)
// are a Nelder-Mead minimum of the relative error on AIConfigurator's vLLM
// 0.14.0 H100 moe rows with every fifth row held out: a refit from the
// stored terms gains under a quarter of a point on the fitted rows (the
// terms trade against each other, so the test checks the error they
// reach, not each constant), the stored terms reach the fitted error
// recorded below within a tenth of a point (a changed constant fails
// here), and the held-out rows stay within issue 31's 10%.
func TestTritonMoERefit(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	d := roofline.NewDevice(h100)
	stored := *d.Curves.TritonMoE
	small, large, block, tuned := roofline.MoETilesSmall, roofline.MoETilesLarge, roofline.MoETilesBlock, roofline.MoETilesTuned
	for _, tc := range []struct {
		p      tritonMoEParams
		fitted float64 // MAPE on the fitted rows at the stored terms
	}{
		{tritonMoEParams{dtype: "bfloat16", tiles: []int{small, large, tuned}, align: true, maxHeld: 10,
			record: func(s *roofline.TritonMoESet) *roofline.TritonMoE { return &s.BF16 }}, 8.30},
		{tritonMoEParams{dtype: "fp8", tiles: []int{small, large, tuned}, quant: true, maxHeld: 10,
			record: func(s *roofline.TritonMoESet) *roofline.TritonMoE { return &s.FP8 }}, 7.66},
		{tritonMoEParams{dtype: "fp8_block", tiles: []int{block, tuned}, quant: true, maxHeld: 10,
			record: func(s *roofline.TritonMoESet) *roofline.TritonMoE { return &s.FP8Block }}, 5.37},
	} {
		rows := tritonMoERows(t, tc.p.dtype)
		if len(rows) < 3000 {
			t.Fatalf("%s: %d rows", tc.p.dtype, len(rows))
		}
		start := tc.p.get(stored)
		step := make([]float64, len(start))
		for i, v := range start {
			step[i] = 0.1*math.Abs(v) + 1e-4
		}
		fit := nelderMead(func(v []float64) float64 {
			s := stored
			tc.p.set(&s, v)
			m, _ := tritonMoEMAPE(rows, d, s, false)
			return m
		}, start, step, 300)
		refit := stored
		tc.p.set(&refit, fit)
		sm, _ := tritonMoEMAPE(rows, d, stored, false)
		rm, _ := tritonMoEMAPE(rows, d, refit, false)
		hm, hb := tritonMoEMAPE(rows, d, stored, true)
		t.Logf("%s: fitted %.2f%% (refit %.2f%%: %.4g), held out %.1f%% (%+.1f%%)", tc.p.dtype, sm, rm, tc.p.get(refit), hm, hb)
		if sm-rm > 0.25 {
			t.Errorf("%s: a refit from the stored terms gains %.2f points (%.2f%% -> %.2f%%): refit them", tc.p.dtype, sm-rm, sm, rm)
		}
		if math.Abs(sm-tc.fitted) > 0.1 {
			t.Errorf("%s: the stored terms reach %.2f%% on the fitted rows, recorded %.2f%%", tc.p.dtype, sm, tc.fitted)
		}
		if hm > tc.p.maxHeld {
			t.Errorf("%s: held-out MAPE %.1f%% over %.0f%%", tc.p.dtype, hm, tc.p.maxHeld)
		}
	}
}

// The kernel KernelsFor names for vLLM 0.24.0 on Hopper is, for every
// balanced row of AIConfigurator's 0.24.0 H100 moe table of a format ftk
// prices, the kernel the row's source records (the collector lets vLLM's
// FusedMoE pick it): per-tensor FP8 and block FP8 under EP on FlashInfer
// CUTLASS, block FP8 under TP and BF16 on Triton.
func TestKernelsForMatchesMoETable(t *testing.T) {
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
	k := roofline.KernelsFor(spec.ArchHopper, "0.24.0").MoE
	n := 0
	for _, m := range tb.MoE {
		var want string
		switch {
		case m.Distribution != "balanced":
			continue
		case m.Dtype == "bfloat16":
			want = k.BF16
		case m.Dtype == "fp8":
			want = k.FP8
		case m.Dtype == "fp8_block" && m.MoEEP > 1:
			want = k.FP8BlockEP
		case m.Dtype == "fp8_block":
			want = k.FP8Block
		default:
			continue
		}
		n++
		if got := roofline.MoEKernelOfSource(m.KernelSource); got != want {
			t.Errorf("%s TP%d EP%d E=%d: the table ran %s (%s), KernelsFor names %q", m.Dtype, m.MoETP, m.MoEEP, m.Experts, got, m.KernelSource, want)
			return
		}
	}
	if n < 10000 {
		t.Fatalf("%d rows checked", n)
	}
}
