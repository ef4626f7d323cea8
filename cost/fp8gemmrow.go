package cost

import (
	"github.com/ftk-dev/ftk/kerneldb"
	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
)

// FP8GEMMRowMs prices the GEMM of one fp8 or fp8_block row of
// AIConfigurator's gemm table with device model r as the simulator prices
// that kernel, without the activation quantization the row also times
// (roofline.LookupFP8QuantPath): a row whose kernel source is vLLM's
// CUTLASS per-tensor scaled_mm (roofline.KernelCutlassFP8) is priced by
// the CUTLASS model (Kernels.FP8Linear, roofline/cutlassfp8.go) over the
// six layers' weights the collector's graph replays (they stay in the L2
// between replays when they fit, RepeatedBlockBytes); other rows by the
// device model's FP8 roof.
func FP8GEMMRowMs(r roofline.Roofline, g *kerneldb.GEMMRow) float64 {
	o := spec.Op{Name: spec.OpAttnPostProj, Family: spec.FamilyLinear, Kernels: 1, K: g.K, N: g.N, ElemBytes: 1, FP8: true, FP8Block: g.Dtype == "fp8_block"}
	if g.KernelSource == roofline.KernelCutlassFP8 {
		r.Kernels.FP8Linear = roofline.FP8Dispatch024
		r.RepeatedBlockBytes = gemmCollectorLayers * float64(g.N) * float64(g.K)
		// Not the output projection: its served input quantization
		// (roofline's servedActQuantUs) is not what the row times.
		o.Name = spec.OpMLPDownProj
	}
	return r.TimeMs(&o, []float64{float64(g.M)}, spec.KernelOnly)
}
