package spec

// vLLM runs the fused-MoE Triton kernel with the tiles of a tuned config
// when its configs directory holds one for the layer's shape and the GPU
// (vllm/model_executor/layers/fused_moe/configs/E=<local experts>,
// N=<expert width>,device_name=<GPU>.json, picked by get_moe_configs), and
// with get_default_config's otherwise. Up to v0.15 (before vLLM PR #34846,
// February 2026) that default was, for more tokens than local experts,
// BLOCK_SIZE_M/N/K 64/64/32 with num_warps and num_stages left to
// Triton's defaults (vllm/model_executor/layers/fused_moe/fused_moe.py,
// v0.8-v0.10; benchmarks/kernels/benchmark_moe_defaults.py keeps it as
// old_default_config). Tuned configs for large batches use far larger
// tiles: 128 x 256 x 64 with 8 warps and 4 stages from 1,024 tokens on an
// H100 for Mixtral-8x7B at TP2 (configs/E=8,N=7168,device_name=
// NVIDIA_H100_80GB_HBM3.json) and for Qwen3-30B-A3B at TP1 (E=128,N=768,
// same GPU, in later vLLM). A 64 x 64 tile loads 2.7 times the operand
// bytes per multiply-add of a 128 x 256 one ((1/64 + 1/64) against
// (1/128 + 1/256)), so the default's MMA runs slower: PR #34846's H100
// measurements (benchmark_moe_defaults.py, old against new default and
// tuned) give many-expert models "up to 2x speedup at large batch size".
//
// ftk's grouped-GEMM roof (ComputeEff) is chosen on tuned-config kernel
// times (PR #24700's Mixtral points, curves.go), and its small-batch
// terms on the H800 profiles, taken under the old default (the K-loop
// step where BLOCK_SIZE_K halves, moegemm.go). So the default config's
// padded MMA is priced at DefaultTileEff of the roof's rate beyond the
// small-batch branch, unless vLLM ships a tuned config for the shape
// (vllmTunedMoEConfigs). ftk prices the old default throughout (as
// fusedMoEBlockM and fusedMoEBlockK do); runs of vLLM after PR #34846,
// whose defaults copy the tuned configs' tiles (vLLM PR #53710: within
// 4-8% of a tuned config at 2-4,096 tokens on an L40S), are priced
// slower than they ran on Hopper; Ada and Blackwell, whose public runs
// are all such, take no penalty (curves.go).

// tunedMoEShape is a fused-MoE config file's key: ftk's device name, the
// local experts (E) and the expert width on the rank (N).
type tunedMoEShape struct {
	device          string
	experts, widthN int
}

// vllmTunedMoEConfigs are the BF16 config files vLLM ships for shapes of
// ftk's catalog, as far as ftk knows them: Mixtral-8x7B at TP2 on an H100
// (PR #24700's log: "Using configuration from .../E=8,N=7168,
// device_name=NVIDIA_H100_80GB_HBM3.json") and at TP4 and TP8 (E=8,
// N=3584 and N=1792, same GPU, in vllm-project/vllm's configs directory).
// Qwen3-30B-A3B at TP1 on an H100 (E=128, N=768) had none in vLLM 0.10
// (PR #23151, August 2025: "WO tuned configs").
var vllmTunedMoEConfigs = map[tunedMoEShape]bool{
	{"h100", 8, 7168}: true,
	{"h100", 8, 3584}: true,
	{"h100", 8, 1792}: true,
}

// moeTileEff is the MMA rate of grouped GEMM o's tiles at features x as
// a fraction of the roof's: the device's DefaultTileEff under vLLM's
// default config for more tokens than local experts, else 1 (a tuned
// config, the small-batch default whose terms the H800 rows fit, FP8,
// whose roof is chosen on its own kernel times, or CUTLASS).
func (r Roofline) moeTileEff(o *Op, x []float64, fp8 bool) float64 {
	c := r.Device.Curves.Class[ClassMoEGEMM]
	if fp8 || o.CutlassMoE || c.DefaultTileEff <= 0 {
		return 1
	}
	if o.batchTokens(x) <= float64(max(o.LocalExperts, 1)) {
		return 1
	}
	if vllmTunedMoEConfigs[tunedMoEShape{r.Device.Name, o.LocalExperts, o.ExpertWidth}] {
		return 1
	}
	return c.DefaultTileEff
}
