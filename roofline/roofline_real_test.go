package roofline

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func formatRealTable(errs []opError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-58s %-26s %6s %8s %9s\n", "profile", "operator", "points", "MAPE%", "held-out%")
	for _, e := range errs {
		fmt.Fprintf(&b, "%-58s %-26s %6d %8.1f %9.1f\n", e.profile, e.op, e.n, e.mape, e.heldMAPE)
	}
	fmt.Fprintf(&b, "\n%-58s %8s %8s %-26s %9s\n", "profile", "mean%", "worst%", "worst operator", "held-out%")
	for _, s := range summarizeProfiles(errs) {
		fmt.Fprintf(&b, "%-58s %8.1f %8.1f %-26s %9.1f\n", s.profile, s.mean, s.worst, s.worstOp, s.heldMu)
	}
	return b.String()
}

// Bounds the built-in model keeps on every real profile: the mean over
// operators of the per-operator MAPE, and the worst operator's. They are
// the errors reached when the curves were fitted (docs/device-model.md,
// "Error on every real profile") plus about one point, so a change that worsens any profile
// fails here. Issue 16's targets (8% mean, 15% worst) are printed by
// BenchmarkRooflineVsRealProfiles; the profiles that miss them are named in
// docs/device-model.md with the reason.
var realProfileBounds = map[string][2]float64{
	"frontier-a800-qwen3-30b-a3b CUDA_EVENT":            {9, 16.7},
	"frontier-a800-qwen3-30b-a3b KERNEL_ONLY":           {8.8, 16.7},
	"frontier-h800/Phi-tiny-MoE-instruct CUDA_EVENT":    {6, 14},
	"frontier-h800/Phi-tiny-MoE-instruct KERNEL_ONLY":   {7, 15},
	"frontier-h800/Qwen3-30B-A3B-tiny CUDA_EVENT":       {6, 14},
	"frontier-h800/Qwen3-30B-A3B-tiny KERNEL_ONLY":      {5.3, 10},
	"frontier-h800/llama2_7b_dense_example CUDA_EVENT":  {6, 14},
	"frontier-h800/llama2_7b_dense_example KERNEL_ONLY": {6.1, 10.7},
	"vidur-h100/Llama-2-7b-hf KERNEL_ONLY":              {9.1, 15.5},
	"vidur-h100/network-h100_dgx CUDA_EVENT":            {8.5, 11},
}

func TestRooflineMatchesRealProfiles(t *testing.T) {
	errs := scoreRealPoints(loadRealPoints(t))
	seen := map[string]bool{}
	for _, s := range summarizeProfiles(errs) {
		seen[s.profile] = true
		b, ok := realProfileBounds[s.profile]
		if !ok {
			t.Errorf("profile %s has no bound: add it to realProfileBounds", s.profile)
			continue
		}
		if s.mean > b[0] || s.worst > b[1] {
			t.Errorf("%s: operator MAPE mean %.1f%% (bound %.1f%%), worst %.1f%% on %s (bound %.1f%%)", s.profile, s.mean, b[0], s.worst, s.worstOp, b[1])
		}
	}
	for p := range realProfileBounds {
		if !seen[p] {
			t.Errorf("profile %s is gone from testdata/profiles", p)
		}
	}
}

// Real rows, one kernel class each, priced within a stated error: the
// points the issue names (skinny decode GEMMs, small memory-bound ops,
// collectives) checked one by one on the H100 profile.
func TestRooflineRealRows(t *testing.T) {
	pts := loadRealPoints(t)
	for _, tc := range []struct {
		file   string
		line   int
		op     string
		maxErr float64 // relative
	}{
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 260, spec.OpMLPUpProj, 0.10},   // TP1, 1 token: 180 MB of weights
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 260, spec.OpAttnPreProj, 0.10}, // TP1, 1 token: 100 MB
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 2, spec.OpMLPUpProj, 0.05},     // TP1, 4096 tokens: compute-bound
		// Vidur's RMSNorm at 4,096 tokens (67 MB read and written) runs
		// past the L2 at 1 TB/s, 66.5 us (Curve.L2Gain: the norm's L2 roof).
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 2, spec.OpInputLayernorm, 0.10},
		// One token: sarathi-serve's RMSNorm reads 4 us (a 4.0-4.3 us
		// kernel, whole microseconds), the H800 profiles' vLLM kernel
		// 2.4-3.0 us (Curve.LegacyFloorUs).
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 262, spec.OpInputLayernorm, 0.10},
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 262, spec.OpPostAttnLayernorm, 0.10},
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 2, spec.OpMLPAct, 0.15},
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 2, spec.OpAttnRope, 0.15},
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 2, spec.OpEmb, 0.15},
		// 16 tokens take PyTorch's small-index gather: 12 us, where 32
		// tokens take 3 us (Curve.SmallIndexUs).
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 258, spec.OpEmb, 0.15},
		// More than 16 tokens: Vidur's stack (PyTorch before 2.8) gathers
		// 4,096 tokens with the scalar large-index kernel in 119 us
		// (line 2, above; Curve.LegacyGatherEff); Frontier's (2.8 or
		// later) gathers 64 tokens with the vectorised gather in 2.7 us,
		// where the old kernel's rate gives 3.6 us.
		{"frontier-h800/llama2_7b_dense_example/linear_op_kernel_only.csv", 3, spec.OpEmb, 0.10},
		{"frontier-h800/Qwen3-30B-A3B-tiny/linear_op_kernel_only.csv", 3, spec.OpEmb, 0.10},
		// The grouped GEMM of Qwen3-30B-A3B-tiny's 8 routed tokens at TP1
		// and TP2: the expert width is sharded over TP (37 -> 22 us).
		{"frontier-h800/Qwen3-30B-A3B-tiny/moe_kernel_only.csv", 2, spec.OpMoEGroupedGEMM, 0.15},
		{"frontier-h800/Qwen3-30B-A3B-tiny/moe_kernel_only.csv", 3, spec.OpMoEGroupedGEMM, 0.20},
		// Few tokens: one block per token loops over the token's elements
		// (Llama-2-7B at TP1, 2 tokens: SiLU-and-mul of 11,008 outputs in
		// 11 iterations, 5.4 us; rotary embedding of 4,096 pairs in 8,
		// 5.2 us), where bandwidth alone gives 2-3 us.
		{"frontier-h800/llama2_7b_dense_example/linear_op_kernel_only.csv", 8, spec.OpMLPAct, 0.15},
		{"frontier-h800/llama2_7b_dense_example/linear_op_kernel_only.csv", 8, spec.OpAttnRope, 0.15},
		// Eager host time per kernel past an op's first (Curves.KernelHostUs):
		// Qwen3-tiny's QKV projection runs its Q/K norms too (113 us against
		// Llama-2's 60 us), and uniform top-8 routing takes 212 us where
		// top-2 takes 84 us (CUDA_EVENT, 1 token).
		{"frontier-h800/Qwen3-30B-A3B-tiny/linear_op.csv", 3, spec.OpAttnPreProj, 0.15},
		// Qwen3-tiny's QKV projection at TP8 with its Q/K norms (qknorm.go):
		// 9.1 us at 1 token, 14.0 us at 2, where the norms' inputs turn
		// strided and two copy kernels run (KERNEL_ONLY).
		{"frontier-h800/Qwen3-30B-A3B-tiny/linear_op_kernel_only.csv", 33, spec.OpAttnPreProj, 0.10},
		{"frontier-h800/Qwen3-30B-A3B-tiny/linear_op_kernel_only.csv", 32, spec.OpAttnPreProj, 0.10},
		// Few rows over a long K: the GEMM's K loop sets the time, not
		// its bytes (skinnygemm.go). Phi-tiny's router GEMM, 0.13 MB at
		// K = 4,096, takes 6.6 us (the floor alone gave 4.8); its TP8 QKV
		// projection, 4.2 MB at K = 4,096, 7.5 us at 32 tokens.
		{"frontier-h800/Phi-tiny-MoE-instruct/moe_kernel_only.csv", 2, spec.OpMoEGatingLinear, 0.10},
		{"frontier-h800/Phi-tiny-MoE-instruct/linear_op_kernel_only.csv", 28, spec.OpAttnPreProj, 0.15},
		// CUDA events around an op right after a long kernel read the
		// kernel, not the host (eventchain.go): Llama-2-7B's SiLU-and-mul
		// reads 9 us after the 65 us TP1 up projection and 23 us after the
		// 13 us TP8 one; its rotary embedding 9 us after the TP1 QKV
		// projection, 21 us at TP2.
		{"frontier-h800/llama2_7b_dense_example/linear_op.csv", 9, spec.OpMLPAct, 0.15},
		{"frontier-h800/llama2_7b_dense_example/linear_op.csv", 33, spec.OpMLPAct, 0.15},
		{"frontier-h800/llama2_7b_dense_example/linear_op.csv", 9, spec.OpAttnRope, 0.15},
		{"frontier-h800/llama2_7b_dense_example/linear_op.csv", 17, spec.OpAttnRope, 0.15},
		{"frontier-h800/Qwen3-30B-A3B-tiny/moe.csv", 2, spec.OpMoERoutingTopK, 0.15},
		{"frontier-h800/Phi-tiny-MoE-instruct/moe.csv", 2, spec.OpMoERoutingTopK, 0.15},
		// An A800 row whose reshapes time 0 is kernel time: its KV-cache
		// write (1 token, TP2) is a 3.5 us kernel, not a 40 us eager op.
		{"frontier-a800-qwen3-30b-a3b/attention.csv", 503, spec.OpAttnKVCacheSave, 0.20},
		{"vidur-h100/network-h100_dgx/all_reduce.csv", 2500, spec.OpAllReduce, 0.15}, // TP4, 13.6 MB
		{"vidur-h100/network-h100_dgx/send_recv.csv", 1000, spec.OpSendRecv, 0.15},
		// 26 KB between two nodes: the network's latency (18 us), not
		// NVLink's (Curve.NetFloorUs; fitted 20.6 us over all sizes).
		{"vidur-h100/network-h100_dgx/send_recv.csv", 5, spec.OpSendRecv, 0.20},
		// The residual add of 4,000 tokens at TP1 (30 us): two 33 MB reads
		// and a 33 MB write, 9.7 MB of them in L2 (Curve.L2ResidentMB).
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 6, spec.OpAdd, 0.10},
		// PyTorch's add on Vidur's stack (Curve.LegacyFloorUs), read from
		// a whole-microsecond trace (wholeus_test.go): 1 token reads 1 us
		// (a 1.9 us kernel; Frontier's fused add + RMSNorm takes 2.9 us),
		// 512 tokens 4 us and 1,024 tokens 7 us (6.99 priced: it reads 6), their 12.6 and 25 MB at
		// the L2's rate (Curve.L2Gain).
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 262, spec.OpAdd, 0.10},
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 196, spec.OpAdd, 0.10},
		{"vidur-h100/Llama-2-7b-hf/mlp.csv", 132, spec.OpAdd, 0.15},
	} {
		var found bool
		for _, p := range pts {
			if p.file != tc.file || p.line != tc.line || p.op.Name != tc.op {
				continue
			}
			found = true
			d, err := LookupDevice(p.device)
			if err != nil {
				t.Fatal(err)
			}
			got := predictPoint(d, p, chainBusy(d, p))
			if e := math.Abs(got-p.ms) / p.ms; e > tc.maxErr {
				t.Errorf("%s:%d %s x=%v: model %.4f ms, measured %.4f ms (%.0f%% off, bound %.0f%%)", tc.file, tc.line, tc.op, p.x, got, p.ms, 100*e, 100*tc.maxErr)
			}
		}
		if !found {
			t.Errorf("%s:%d has no %s point", tc.file, tc.line, tc.op)
		}
	}
}

// Skinny decode GEMMs stream their weights at 80-90% of HBM bandwidth on
// H100 (the issue; the Vidur rows above measure 2.8 TB/s for the 1-token
// up projection), where the old model priced them at about 68%.
func TestDecodeGEMMStreamsWeights(t *testing.T) {
	d, _ := LookupDevice("h100")
	r := Roofline{Device: d}
	// Llama-3.1-70B at TP4: the MLP up projection of one decode step of
	// 13 sequences, [13, 8192] x [8192, 7168]: 117 MB of weights.
	o := spec.Op{Name: spec.OpMLPUpProj, Family: spec.FamilyLinear, Kernels: 1, K: 8192, N: 2 * 28672 / 4, ElemBytes: 2}
	_, bytes := o.Work([]float64{13})
	bw := bytes / (r.KernelMs(&o, []float64{13}) / 1e3) / (d.HBMGBps * 1e9)
	if bw < 0.80 || bw > 0.92 {
		t.Errorf("decode up projection streams at %.0f%% of HBM bandwidth, want 80-92%%", 100*bw)
	}
}

func formatCurves(name string, c Curves) string {
	var b strings.Builder
	fmt.Fprintf(&b, "var %s = Curves{Class: [numKernelClasses]Curve{\n", name)
	for k := KernelClass(0); k < numKernelClasses; k++ {
		v := c.Class[k]
		fmt.Fprintf(&b, "\t%s: {FloorUs: %.3g, MemEff: %.3g", classIdent[k], v.FloorUs, v.MemEff)
		if v.ComputeEff > 0 {
			fmt.Fprintf(&b, ", ComputeEff: %.3g", v.ComputeEff)
		}
		if v.HalfFLOPs > 0 {
			fmt.Fprintf(&b, ", HalfFLOPs: %.3g", v.HalfFLOPs)
		}
		if v.TileLoadShare > 0 {
			fmt.Fprintf(&b, ", TileLoadShare: %.3g", v.TileLoadShare)
		}
		if v.DefaultTileSMTFLOPS > 0 {
			fmt.Fprintf(&b, ", DefaultTileSMTFLOPS: %.3g", v.DefaultTileSMTFLOPS)
		}
		if v.SmallIndexUs > 0 {
			fmt.Fprintf(&b, ", SmallIndexUs: %.3g", v.SmallIndexUs)
		}
		if v.LegacyGatherEff > 0 {
			fmt.Fprintf(&b, ", LegacyGatherEff: %.3g", v.LegacyGatherEff)
		}
		if v.LegacyFloorUs > 0 {
			fmt.Fprintf(&b, ", LegacyFloorUs: %.3g", v.LegacyFloorUs)
		}
		if v.IterUs > 0 {
			fmt.Fprintf(&b, ", IterUs: %.3g", v.IterUs)
		}
		if v.FullIterUs > 0 {
			fmt.Fprintf(&b, ", FullIterUs: %.3g", v.FullIterUs)
		}
		if v.RowUs > 0 {
			fmt.Fprintf(&b, ", RowUs: %.3g", v.RowUs)
		}
		if v.L2ResidentMB > 0 {
			fmt.Fprintf(&b, ", L2ResidentMB: %.3g", v.L2ResidentMB)
		}
		if v.L2Gain > 0 {
			fmt.Fprintf(&b, ", L2Gain: %.3g", v.L2Gain)
		}
		if v.WarmFloorUs > 0 {
			fmt.Fprintf(&b, ", WarmFloorUs: %.3g", v.WarmFloorUs)
		}
		if v.TileL2GBps > 0 {
			fmt.Fprintf(&b, ", TileL2GBps: %.4g", v.TileL2GBps)
		}
		if v.NetFloorUs > 0 {
			fmt.Fprintf(&b, ", NetFloorUs: %.3g", v.NetFloorUs)
		}
		if v.HostPreUs > 0 || v.HostUs > 0 {
			fmt.Fprintf(&b, ", HostPreUs: %.3g, HostUs: %.3g", v.HostPreUs, v.HostUs)
		}
		b.WriteString("},\n")
	}
	b.WriteString("}, Host: map[string]HostTerms{\n")
	names := make([]string, 0, len(c.Host))
	for n := range c.Host {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\t%q: {PreUs: %.3g, Us: %.3g},\n", n, c.Host[n].PreUs, c.Host[n].Us)
	}
	fmt.Fprintf(&b, "}, ColdHostFactor: %g, FP8ComputeEff: %g, FP8TritonMoEEff: %g, KernelHostUs: %g, EventGapUs: %.3g,\nCustomAllReduce: hopperCustomAllReduce, FA3: &hopperFA3",
		c.ColdHostFactor, c.FP8ComputeEff, c.FP8TritonMoEEff, c.KernelHostUs, c.EventGapUs)
	if len(c.GEMMTiles) > 0 {
		b.WriteString(", GEMMTiles: ampereGEMMTiles") // a fixed table (gemmtiles.go), not fitted
	}
	b.WriteString("}\n")
	return b.String()
}

var classIdent = [numKernelClasses]string{"ClassGEMM", "ClassNorm", "ClassAct", "ClassRope", "ClassAdd", "ClassEmbedding", "ClassCopy",
	"ClassAttnPrefill", "ClassAttnDecode", "ClassMoERouting", "ClassMoEShuffle", "ClassMoEGEMM", "ClassAllReduce", "ClassSendRecv", "ClassAllToAll"}

// BenchmarkRooflineVsRealProfiles prints the built-in model's per-operator
// MAPE on every real profile (all points and the held-out fifth), and each
// profile's mean and worst against issue 16's targets.
func BenchmarkRooflineVsRealProfiles(b *testing.B) {
	pts := loadRealPoints(b)
	for b.Loop() {
		errs := scoreRealPoints(pts)
		fmt.Printf("built-in device model vs real profiles (%d points; held-out = every fifth row, never fitted)\n%s", len(pts), formatRealTable(errs))
		for _, s := range summarizeProfiles(errs) {
			verdict := "meets"
			if s.mean > 8 || s.worst > 15 {
				verdict = "MISSES"
			}
			fmt.Printf("issue 16 target (mean <= 8%%, worst <= 15%%) %s: %s\n", verdict, s.profile)
		}
	}
}

// BenchmarkCalibrateCurves refits the curves of curves.go from the real
// profiles (calibration rows only) and prints them in Go syntax, so the
// shipped constants can be reproduced or refreshed.
func BenchmarkCalibrateCurves(b *testing.B) {
	pts := loadRealPoints(b)
	for b.Loop() {
		hop := fitCurves(pts, spec.ArchHopper)
		fmt.Print(formatCurves("hopperCurves", hop))
		_, untimed, pass := fitEventChain(pts, spec.ArchHopper, hop)
		fmt.Printf("var profilerUntimedOpUs, profilerPassGapUs = %.3g, %.3g // realprofile_test.go\n", untimed, pass)
		fmt.Print(formatCurves("ampereCurves", fitCurves(pts, spec.ArchAmpere)))
	}
}

// BenchmarkLeaveOneProfileOut refits the Hopper curves without each Hopper
// profile folder in turn (both its measurement types) and scores that
// folder with the refit: error on a model, software stack and shape set the
// fit never saw. The network folder is skipped (it alone holds the
// collective classes, which would keep their shipped values). The fit
// starts from the shipped constants, so only its starting point knows the
// folder.
func BenchmarkLeaveOneProfileOut(b *testing.B) {
	pts := loadRealPoints(b)
	folders := map[string]bool{}
	for _, p := range pts {
		if archOfProfileDevice(p.device) == spec.ArchHopper && !strings.Contains(p.file, "network") {
			folders[filepath.Dir(p.file)] = true
		}
	}
	var names []string
	for f := range folders {
		names = append(names, f)
	}
	sort.Strings(names)
	for b.Loop() {
		fmt.Printf("leave one profile out (Hopper): fitted without the folder, scored on it\n%-58s %8s %8s %-26s\n", "profile", "mean%", "worst%", "worst operator")
		for _, f := range names {
			var fit, out []realPoint
			for _, p := range pts {
				if filepath.Dir(p.file) == f {
					out = append(out, p)
				} else {
					fit = append(fit, p)
				}
			}
			c := fitCurves(fit, spec.ArchHopper)
			for _, s := range summarizeProfiles(scoreRealPointsWith(out, map[string]Curves{spec.ArchHopper: c})) {
				fmt.Printf("%-58s %8.1f %8.1f %-26s\n", s.profile, s.mean, s.worst, s.worstOp)
			}
		}
	}
}
