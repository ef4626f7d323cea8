package roofline

import (
	"math"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestFA4Splits(t *testing.T) {
	for _, tc := range []struct {
		name           string
		totalM, blocks float64
		maxSplits      int
		want           float64
	}{
		{"vLLM's bound is the count, even over one block", 512, 1, 32, 32},
		{"heuristic: at most 4 key blocks", 1, 4, 0, 1},
		{"heuristic: the query tiles fill the SMs", 512, 100, 0, 1},
		{"heuristic: SMs over query tiles", 16, 100, 0, 8},
		{"heuristic: at most the key blocks", 2, 10, 0, 10},
		{"heuristic: at most 128", 1, 1000, 0, 128},
	} {
		if got := fa4Splits(tc.totalM, tc.blocks, tc.maxSplits, 132); got != tc.want {
			t.Errorf("%s: fa4Splits(%v, %v, %d) = %v, want %v", tc.name, tc.totalM, tc.blocks, tc.maxSplits, got, tc.want)
		}
	}
	if fa4MaxSplits(512, 0) != 32 || fa4MaxSplits(513, 0) != 0 || fa4MaxSplits(16, 2) != 0 || fa4MaxSplits(2, 2) != 32 || fa4MaxSplits(1, -1) != 0 {
		t.Errorf("fa4MaxSplits: want 32 within the capture size (default 512), 0 past it and without full CUDA graphs")
	}
}

// fa4ScanSteps' closed form is the mean and the most of floor(i/31) over
// the sequences.
func TestFA4ScanSteps(t *testing.T) {
	for _, n := range []int{1, 30, 31, 32, 62, 100, 512, 1024, 2048} {
		sum, most := 0.0, 0.0
		for i := 0; i < n; i++ {
			s := math.Floor(float64(i) / fa4ScanGroup)
			sum += s
			most = math.Max(most, s)
		}
		mean, gotMost := fa4ScanSteps(float64(n))
		if math.Abs(mean-sum/float64(n)) > 1e-9 || gotMost != most {
			t.Errorf("fa4ScanSteps(%d) = %v, %v; want %v, %v", n, mean, gotMost, sum/float64(n), most)
		}
	}
}

// vLLM 0.24.0 runs FA4 on Hopper for head dims over 256 only: such a layer
// is priced by the FA4 terms when --vllm-version gives 0.24.0 (KernelsFor's
// FA3) or the row's kernel is FA4, and by FA3's terms at head dim 128; with
// no version, and on the B200, FA4's terms price nothing.
func TestFA4Dispatch(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	b200, err := spec.LookupDevice("b200")
	if err != nil {
		t.Fatal(err)
	}
	dec := func(hd int) spec.Op {
		return spec.Op{Name: spec.OpAttnDecode, Family: spec.FamilyAttention, Kernels: 1, QHeads: 8, KVHeads: 1, HeadDim: hd, ElemBytes: 2}
	}
	x := []float64{64, 1000}
	d := NewDevice(h100)
	fa4Us := func(o spec.Op) float64 { return hopperFA4.decodeUs(&o, x, d.SMs, d.HBMGBps, 0) }
	for _, tc := range []struct {
		name    string
		dev     *spec.Device
		kernels Kernels
		hd      int
		fa4     bool
	}{
		{"0.24.0, head dim 512", h100, KernelsFor(spec.ArchHopper, "0.24.0"), 512, true},
		{"the FA4 rows' kernel", h100, Kernels{Attention: AttentionFA4}, 512, true},
		{"0.24.0, head dim 128", h100, KernelsFor(spec.ArchHopper, "0.24.0"), 128, false},
		{"FA4 named at head dim 128", h100, Kernels{Attention: AttentionFA4}, 128, false},
		{"no version", h100, Kernels{}, 512, false},
		{"0.14.0", h100, KernelsFor(spec.ArchHopper, "0.14.0"), 512, false},
		{"B200", b200, KernelsFor(spec.ArchBlackwell, "0.24.0"), 512, false},
	} {
		o := dec(tc.hd)
		r := Roofline{Device: NewDevice(tc.dev), Compiled: true, Kernels: tc.kernels}
		got := r.TimeMs(&o, x, spec.KernelOnly) * 1e3
		if isFA4 := math.Abs(got-fa4Us(o)) < 1e-9; isFA4 != tc.fa4 {
			t.Errorf("%s: %.2f us, FA4's terms %.2f us; want FA4 %v", tc.name, got, fa4Us(o), tc.fa4)
		}
	}
}

// What the source and the rows show of FA4 on Hopper, as the model prices
// it (the simulator's default capture size, 512 tokens): a decode batch
// within the capture size runs 32 splits a (sequence, KV head), so 512
// sequences of one KV head over 2 cached tokens cost more than 1,024
// (AIConfigurator's H100 0.24.0 rows: 1.69 ms and 173 us); the combine's
// grid grows as the batch squared, so 512 sequences of 8 query heads cost
// more than of one (2.45 and 1.69 ms); and one query token a sequence in
// a prefill is priced as the decode it is.
func TestFA4DecodeAsRun(t *testing.T) {
	h100, err := spec.LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: NewDevice(h100), Compiled: true, Kernels: KernelsFor(spec.ArchHopper, "0.24.0")}
	dec := func(qHeads int, b, ctx float64) float64 {
		o := spec.Op{Name: spec.OpAttnDecode, Family: spec.FamilyAttention, Kernels: 1, QHeads: qHeads, KVHeads: 1, HeadDim: 512, ElemBytes: 2}
		return r.TimeMs(&o, []float64{b, ctx}, spec.KernelOnly) * 1e3
	}
	us512, us1024 := dec(1, 512, 1), dec(1, 1024, 1)
	t.Logf("one KV head at 1 cached token: 512 sequences %.0f us, 1,024 %.0f us; 8 query heads at 512: %.0f us", us512, us1024, dec(8, 512, 1))
	if us512 < 5*us1024 || math.Abs(us512/1690-1) > 0.15 || math.Abs(us1024/173-1) > 0.15 {
		t.Errorf("one KV head at 1 cached token: 512 sequences %.0f us, 1,024 %.0f us; want within 15%% of 1,690 and 173 us", us512, us1024)
	}
	if g8 := dec(8, 512, 1); math.Abs(g8/2450-1) > 0.15 {
		t.Errorf("512 sequences of 8 query heads: %.0f us, want within 15%% of 2,450 us", g8)
	}
	o := spec.Op{Name: spec.OpAttnPrefill, Family: spec.FamilyAttention, Kernels: 1, QHeads: 8, KVHeads: 1, HeadDim: 512, ElemBytes: 2}
	seqs, ctx := 64.0, 3000.0
	x := []float64{ctx * math.Sqrt(seqs), math.Sqrt(seqs), seqs} // spec's equivalent of 64 one-token chunks
	if p, d := r.TimeMs(&o, x, spec.KernelOnly)*1e3, dec(8, seqs, ctx); math.Abs(p/d-1) > 0.01 {
		t.Errorf("64 one-token prefills over 3,000 cached tokens: %.1f us, the decode %.1f us", p, d)
	}
}
