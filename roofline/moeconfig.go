package roofline

import (
	"github.com/ftk-dev/ftk/spec"
)

// vLLM runs the fused-MoE Triton kernel with the tiles of a tuned config
// when its configs directory holds one for the layer's shape and the GPU
// (vllm/model_executor/layers/fused_moe/configs/, get_moe_configs; the
// files: each device record's vllm_moe_configs, spec/devices/), and with get_default_config's otherwise.
// Before vLLM PR #34846 (first released in v0.17.0) that default was, for
// more tokens than local experts, BLOCK_SIZE_M/N/K 64/64/32 with
// num_warps and num_stages left to Triton's defaults (fused_moe.py,
// v0.8-v0.16; benchmarks/kernels/benchmark_moe_defaults.py keeps it as
// old_default_config). Tuned configs for large batches use far larger
// tiles: 128 x 256 x 64 with 8 warps and 4 stages from 1,024 tokens on an
// H100 for Mixtral-8x7B at TP2 (E=8,N=7168,device_name=
// NVIDIA_H100_80GB_HBM3.json) and from 1,536 for Qwen3-30B-A3B at TP1
// (E=128,N=768, same GPU, after v0.27.1). A 64 x 64 tile loads 2.7 times
// the operand bytes per multiply-add of a 128 x 256 one ((1/64 + 1/64)
// against (1/128 + 1/256)), so the default's MMA runs slower: PR #34846's
// H100 measurements (benchmark_moe_defaults.py, old against new default
// and tuned) give many-expert models "up to 2x speedup at large batch
// size". Its new default (fused_moe.py from v0.17.0) scales the tiles
// with the batch: BLOCK_SIZE_M 16/32/64/128 up to 32/96/512 tokens and
// beyond, BLOCK_SIZE_N 128 and BLOCK_SIZE_K 64 beyond 64 tokens, 8 warps
// beyond 128, 3 stages: within 0-5% of a tuned config on an H200 (vLLM
// PR #44818, Gemma-4 E=128, N=704, 1-4,096 tokens), 4-8% on an L40S (PR
// #53710), 7-11% on an A100 from 256 tokens (PR #40542).
//
// ftk's grouped-GEMM roof (ComputeEff) is chosen on tuned-config kernel
// times (PR #24700's Mixtral points, curves.go), and its small-batch
// terms on the H800 profiles, taken under the old default (the K-loop
// step where BLOCK_SIZE_K halves, moegemm.go). So the old default
// config's padded MMA is priced at the default tiles' per-SM rate
// (DefaultTileSMTFLOPS: 0.36 of the roof on an H100) beyond the
// small-batch branch, unless vLLM of the era ships a tuned config for the
// shape (tunedMoEConfig). The rate is per SM because the tiles'
// operand loads bound it, not the tensor cores: an H20 SM (a quarter of
// an H100's tensor rate) and an Ada SM compute below it and pay nothing
// (vLLM PR #44152: on an H20 the old default ties tuned configs at
// 2,048-4,096 tokens). Runs of vLLM v0.17 or later on H100s, H200s,
// H800s and Ampere GPUs are priced slower than they ran where their layer
// has no tuned file; Blackwell is not priced (curves.go).

// The era ftk prices. ftk has no vLLM-version option: it prices the
// fused-MoE kernel's tiles as vLLM v0.10-v0.16 (August 2025 to February
// 2026) chose them, the releases its Hopper evidence ran (PR #23151's H100
// run on vLLM 0.10, PR #24700's kernel times, Frontier's H800 profiles).
// v0.17.0 (2026-03-07) is the first release with vLLM PR #34846 (merged
// 2026-02-23): v0.16.0's branch predates main's PyTorch 2.10 update of
// 2026-02-08 (vLLM PR #30525), which v0.17.0's notes list as its upgrade.
// So a config file counts if its name was on main before that date
// (vllmEraFilesBefore), and an untuned layer runs the old default tiles.
// The Qwen3-30B-A3B H100 files at TP1 (E=128, N=768), under TP8/EP8
// (E=16, N=768) and EP2 (E=64, N=768) came after v0.27.1 (spec/devices/h100.yaml):
// no release of the era, nor up to v0.27.1, had them; TP4's (E=128,
// N=192) came with vLLM PR #17328 (2025-04-28) and TP2's (E=128, N=384)
// with vLLM PR #31201 (2026-03-28), after the era.
const vllmEraFilesBefore = "2026-02-08"

// tunedMoEConfig says whether vLLM of the era ftk prices ships a tuned
// config for a fused-MoE layer of experts local experts and expert width
// widthN on the rank (vLLM's E and N: w2's shape, so under EP the local
// experts at full width) on the device, BF16 (dtype "") or FP8 (dtype
// "fp8_w8a8", block the quantization block, 0 per tensor), and which file
// it is. The files are the device record's (spec.Device.VLLMMoEConfigs);
// those on vLLM's main before vllmEraFilesBefore count.
func (d *Device) tunedMoEConfig(experts, widthN int, dtype string, block int) (spec.VLLMMoEConfig, bool) {
	return d.tunedMoEConfigBefore(experts, widthN, dtype, block, vllmEraFilesBefore)
}

// tunedMoEConfigBefore is tunedMoEConfig for the files on vLLM's main
// before date before (YYYY-MM-DD).
func (d *Device) tunedMoEConfigBefore(experts, widthN int, dtype string, block int, before string) (spec.VLLMMoEConfig, bool) {
	f, ok := d.eraMoEConfigs[vllmMoEConfigKey{experts, widthN, dtype, block}]
	return f, ok && f.Added < before
}

// vllmMoEConfigKey is what get_config_file_name puts in a file's name
// beside the device's.
type vllmMoEConfigKey struct {
	experts, widthN int
	dtype           string
	block           int
}

// indexEraMoEConfigs maps the name of each file with a known date to the
// file (the grouped GEMM asks for every layer of every step it prices).
func indexEraMoEConfigs(files []spec.VLLMMoEConfig) map[vllmMoEConfigKey]spec.VLLMMoEConfig {
	idx := make(map[vllmMoEConfigKey]spec.VLLMMoEConfig, len(files))
	for _, f := range files {
		if f.Added != "" {
			idx[vllmMoEConfigKey{f.Experts, f.WidthN, f.Dtype, f.Block}] = f
		}
	}
	return idx
}

// moeTileEff is the MMA rate of grouped GEMM o's tiles at features x as
// a fraction of the roof's: under vLLM's old default config, for more
// tokens than local experts and no tuned file of the era, the default
// tiles' per-SM rate (DefaultTileSMTFLOPS) over the roof's per-SM rate
// where that is lower, else 1 (a tuned config, the small-batch default
// whose terms the H800 rows fit, FP8, whose roof is chosen on its own
// kernel times, or CUTLASS).
func (r Roofline) moeTileEff(o *spec.Op, x []float64, fp8 bool) float64 {
	c := r.Device.Curves.Class[ClassMoEGEMM]
	if fp8 || o.CutlassMoE || c.DefaultTileSMTFLOPS <= 0 || c.ComputeEff <= 0 || r.Device.SMs <= 0 {
		return 1
	}
	if batchTokens(o, x) <= float64(max(o.LocalExperts, 1)) {
		return 1
	}
	if _, tuned := r.Device.tunedMoEConfig(o.LocalExperts, o.ExpertWidth, "", 0); tuned {
		return 1
	}
	roofPerSM := c.ComputeEff * r.Device.PeakBF16TFLOPS / float64(r.Device.SMs)
	return min(1, c.DefaultTileSMTFLOPS/roofPerSM)
}
