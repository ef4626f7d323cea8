package roofline

import (
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestGEMMKLoopAndTileRows(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   spec.Op
		want float64
	}{
		{"BF16 router, K 4,096: 64 steps of 64", spec.Op{Name: spec.OpMoEGatingLinear, K: 4096, N: 16, ElemBytes: 2}, 64},
		{"FP8 projection, K 4,096: 32 steps of 128", spec.Op{Name: spec.OpAttnPostProj, K: 4096, N: 2048, ElemBytes: 1}, 32},
		{"partial last step", spec.Op{Name: spec.OpMLPDownProj, K: 1376, N: 4096, ElemBytes: 2}, 22},
		{"not a dense GEMM", spec.Op{Name: spec.OpMoEGroupedGEMM, K: 4096, ExpertWidth: 768, ElemBytes: 2}, 0},
		{"element-wise", spec.Op{Name: spec.OpInputLayernorm, Width: 4096, ElemBytes: 2}, 0},
	} {
		if got := gemmKLoop(&tc.op); got != tc.want {
			t.Errorf("%s: %v K steps, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct{ tokens, rows float64 }{{1, 64}, {64, 64}, {128, 64}, {129, 128}, {4096, 128}} {
		if got := gemmTileRows(tc.tokens); got != tc.rows {
			t.Errorf("%v tokens: %v-row tiles, want %v", tc.tokens, got, tc.rows)
		}
	}
	// A 1-token GEMM on Hopper is priced at its floor plus the larger of
	// the K loop and the weight stream: the router GEMM (0.13 MB) by its
	// K loop, the up projection of Llama-2-7B (180 MB) by its bytes.
	d, err := LookupDevice("h800")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d}
	c := d.Curves.Class[ClassGEMM]
	router := spec.Op{Name: spec.OpMoEGatingLinear, Family: spec.FamilyMoE, Kernels: 1, K: 4096, N: 16, ElemBytes: 2}
	if got, want := r.KernelMs(&router, []float64{1})*1e3, c.FloorUs+64*c.IterUs; got < want-1e-9 || got > want*1.01 {
		t.Errorf("router GEMM %.2f us, want floor + 64 K steps = %.2f us", got, want)
	}
	up := spec.Op{Name: spec.OpMLPUpProj, Family: spec.FamilyLinear, Kernels: 1, K: 4096, N: 22016, ElemBytes: 2}
	_, bytes := up.Work([]float64{1})
	if got, want := r.KernelMs(&up, []float64{1})*1e3, c.FloorUs+bytes/(d.HBMGBps*1e9*c.MemEff)*1e6; got > want*1.001 || got < want*0.999 {
		t.Errorf("up projection %.2f us, want floor + weight stream = %.2f us", got, want)
	}
}

// The K loop's split (skinnygemm.go) against AIConfigurator's H100 SXM
// BF16 gemm rows (vLLM 0.14.0, testdata/aiconfigurator): 16 tokens by 32
// columns takes 6.4 us at K = 3,584 and 6.5 us at K = 16,384 (the whole
// loop would be 16.6 us); 16 tokens by 512 columns at K = 8,192 takes
// 8.4 us and keeps the whole loop (10.0 us; split, 6.7 us). Each within
// 20% of the row.
func TestGEMMKLoopSplitAgainstKernelTable(t *testing.T) {
	d, err := LookupDevice("h100")
	if err != nil {
		t.Fatal(err)
	}
	r := Roofline{Device: d, Compiled: true}
	for _, tc := range []struct {
		n, k       int
		measuredUs float64
	}{{32, 3584, 6.43}, {32, 16384, 6.49}, {512, 8192, 8.44}} {
		o := spec.Op{Name: spec.OpAttnPostProj, Family: spec.FamilyLinear, Kernels: 1, K: tc.k, N: tc.n, ElemBytes: 2}
		got := r.TimeMs(&o, []float64{16}, spec.KernelOnly) * 1e3
		if e := (got - tc.measuredUs) / tc.measuredUs; e > 0.2 || e < -0.2 {
			t.Errorf("16 x %d x %d: %.2f us, measured %.2f (%+.0f%%)", tc.n, tc.k, got, tc.measuredUs, e*100)
		}
	}
}
