package cost

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// vLLM 0.24.0's FP8 linear dispatch (roofline.FP8LinearKernel, set by
// KernelsFor from --vllm-version) names the kernel of every fp8 and
// fp8_block row of AIConfigurator's vLLM 0.24.0 H100 SXM and B200 SXM gemm
// tables, as their kernel_source records it.
func TestFP8LinearKernelMatchesTables(t *testing.T) {
	for _, dev := range []string{"h100", "b200"} {
		d, err := spec.LookupDevice(dev)
		if err != nil {
			t.Fatal(err)
		}
		k := roofline.KernelsFor(d.Arch, "0.24.0")
		if k.FP8Linear != roofline.FP8Dispatch024 {
			t.Fatalf("%s: KernelsFor(%q, 0.24.0).FP8Linear = %q", dev, d.Arch, k.FP8Linear)
		}
		if k := roofline.KernelsFor(d.Arch, ""); k.FP8Linear != "" {
			t.Errorf("%s: no version, FP8Linear %q", dev, k.FP8Linear)
		}
		db, err := kerneldb.Open(filepath.Join("..", "testdata", "aiconfigurator-0.24", dev+"_sxm"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := db.Resolve("gemm_perf", "0.24.0")
		if err != nil {
			t.Fatal(err)
		}
		tb, err := kerneldb.ReadTable(res.Path)
		if err != nil {
			t.Fatal(err)
		}
		count, wrong := map[string]int{}, 0
		for _, g := range tb.GEMM {
			if g.Dtype != "fp8" && g.Dtype != "fp8_block" {
				continue
			}
			got := roofline.FP8LinearKernel(k.FP8Linear, d.Arch, g.Dtype == "fp8_block", g.M, g.N, g.K)
			count[got]++
			if got != g.KernelSource {
				if wrong++; wrong <= 5 {
					t.Errorf("%s %s M=%d N=%d K=%d: dispatched %q, the row ran %q", dev, g.Dtype, g.M, g.N, g.K, got, g.KernelSource)
				}
			}
		}
		t.Logf("%s: %v; %d rows not matched", dev, count, wrong)
		if len(count) < 3 {
			t.Errorf("%s: %d kernels dispatched, want CUTLASS, CUTLASS block and DeepGEMM at least", dev, len(count))
		}
	}
}

// The served activation quantization's terms (roofline.FP8ActQuant) are a
// least-squares fit of the relative error on AIConfigurator's vLLM 0.24.0
// static quantization rows (quantize/scale_matrix_perf) of each device,
// every fifth row held out: the refit reproduces each stored constant
// within 1%, and the held-out error stays within the bound stated per
// device (the rows that fit the L2 run faster than the mean bytes say,
// the largest slower: a floor, a token and a byte term do not follow both).
func TestFP8ActQuantRefit(t *testing.T) {
	for _, c := range []struct {
		dev   string
		bound float64
	}{{"h100", 17}, {"b200", 10}} {
		d, err := spec.LookupDevice(c.dev)
		if err != nil {
			t.Fatal(err)
		}
		q, ok := roofline.FP8ActQuantOf(d.Arch)
		if !ok {
			t.Fatalf("%s: no activation quantization terms", c.dev)
		}
		qr, err := kerneldb.ReadQuantTable(filepath.Join("..", "testdata", "aiconfigurator-0.24", c.dev+"_sxm", "quantize", "vllm", "0.24.0", kerneldb.TableQuantStatic+".parquet"))
		if err != nil {
			t.Fatal(err)
		}
		rows := make([]quantFitRow, len(qr))
		for i, r := range qr {
			rows[i] = quantFitRow{measuredUs: r.LatencyMs * 1e3, tokens: float64(r.M), elems: float64(r.M) * float64(r.K)}
		}
		floor, bpe, tok := fitFP8Quant(rows, d.HBMGBps, true)
		if math.Abs(floor/q.FloorUs-1) > 0.01 || math.Abs(bpe/q.BytesPerElem-1) > 0.01 || math.Abs(tok/q.TokenUs-1) > 0.01 {
			t.Errorf("%s: refit %.3f us + %.6f us/token + %.3f B/element; stored %.3f, %.6f, %.3f", c.dev, floor, tok, bpe, q.FloorUs, q.TokenUs, q.BytesPerElem)
		}
		dev := roofline.NewDevice(d)
		var mape [2]float64
		var n [2]int
		for i, r := range rows {
			h := 0
			if i%5 == 4 {
				h = 1
			}
			mape[h] += math.Abs(q.Us(dev, r.tokens, r.elems/r.tokens)-r.measuredUs) / r.measuredUs * 100
			n[h]++
		}
		fit, held := mape[0]/float64(n[0]), mape[1]/float64(n[1])
		t.Logf("%s: %d rows; refit %.3f us + %.6f us/token + %.3f B/element; fitted %.1f%%, held out %.1f%%", c.dev, len(rows), floor, tok, bpe, fit, held)
		if held > c.bound {
			t.Errorf("%s: held-out MAPE %.1f%% over %.0f%%", c.dev, held, c.bound)
		}
	}
}
