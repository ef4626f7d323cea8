package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Roofline is the built-in device model (docs/design.md section 6): the time of an
// operator from its FLOPs and bytes through the fitted curve of its kernel
// class on the device (Curve), with wave quantisation over SMs and split-K
// for GEMMs, a per-launch floor, and, for CUDA_EVENT timings, the host time
// of eager execution.
//
// All-reduces within an NVLink node of 2-8 GPUs under
// customAllReduceMaxBytes take vLLM's custom all-reduce (one kernel with a
// cross-GPU barrier, the vLLM default), others NCCL; NCCL set prices every
// all-reduce as NCCL (what a torch.distributed profile such as Vidur's
// measures).
type Roofline struct {
	Device *Device
	NCCL   bool
	// BusyUs is, for CUDA_EVENT timings, how far the GPU is still behind
	// the host with earlier work when the op's start event is recorded
	// (eventchain.go); 0: the op is timed in isolation.
	BusyUs float64
	// LegacyStack prices ops as an older stack ran them (Vidur's H100
	// profile, sarathi-serve's layers on PyTorch before 2.8, 2024):
	//   - the embedding gather with PyTorch's large-index kernel
	//     (Curve.LegacyGatherEff): its gather moves 16 KB a token at 0.6
	//     TB/s, where Frontier's H800 and A800 profiles, taken under vLLM
	//     with PyTorch 2.8 or later, reach the HBM roof (vLLM's main branch
	//     moved to PyTorch 2.8.0 in August 2025, vllm PR #20358);
	//   - the residual add as PyTorch's element-wise add
	//     (Curve.LegacyFloorUs), not vLLM's add fused into RMSNorm.
	LegacyStack bool
	// Compiled prices the ops as vLLM runs them under torch.compile with
	// Inductor, its default in every execution mode but --enforce-eager:
	// vLLM's custom ops (RMSNorm, rotary embedding, ...) are then disabled
	// and Inductor generates Triton kernels in their place
	// (vllm/config/compilation.py, CompilationConfig.custom_ops: "By
	// default, all custom ops are enabled when running without Inductor
	// and disabled when running with Inductor ... Inductor generates
	// (fused) Triton kernels for disabled custom ops"). What changes in
	// the price is in qknorm.go.
	Compiled bool
	// RepeatedBlockBytes is, for a profile that runs one transformer block
	// over and over (Frontier's linear-op profiler), the bytes of that
	// block's GEMM weights on one GPU; when they fit in the L2, its GEMMs
	// stream their weights from there (warml2.go). 0: serving, every
	// layer's weights read from HBM.
	RepeatedBlockBytes float64
	// AttentionBackend is the attention backend the kernels ran on, as
	// vLLM names it (FLASH_ATTN, FLASHINFER); empty: vLLM's default on
	// the device, FLASH_ATTN (FlashAttention-3 on Hopper, fa3.go). A
	// profile taken with FlashInfer (Frontier's H800 and A800 attention
	// profilers) is priced by the attention classes' curves.
	AttentionBackend string
	// CollectivesAligned says the GPUs enter each collective together, as
	// in a benchmark that replays all-reduces back to back
	// (AIConfigurator's comm rows): the custom all-reduce's served entry
	// wait (CustomAllReduce.ServedWaitUs) is left out.
	CollectivesAligned bool
	// Kernels names the kernels vLLM runs where the price depends on
	// which one it picks (kernelchoice.go); zero: the device's defaults.
	Kernels Kernels
	// FlashInferUntuned says FlashInfer's fused MoE runs the tactics it
	// falls back to without autotuning, as in AIConfigurator's vLLM 0.24.0
	// moe rows (collect_moe.py builds the layer without vLLM's warm-up);
	// a served vLLM autotunes them at warm-up (vllm/model_executor/warmup/
	// kernel_warmup.py, flashinfer_autotune, on SM90 and later). Only
	// Hopper's per-tensor FP8 CUTLASS MoE reads it (moecutlasshopper.go).
	FlashInferUntuned bool
	// WarmKV says each attention op reads a KV cache still in the L2
	// from the op before, as in a benchmark that replays one layer back
	// to back (AIConfigurator's attention rows); a served step reads
	// each layer's KV from HBM. Only the TRT-LLM terms use it
	// (trtllmattn.go).
	WarmKV bool
	// CaptureTokens is vLLM's largest CUDA-graph capture size
	// (max_cudagraph_capture_size), which decides the key-split bound vLLM
	// passes FlashAttention (fa3MaxSplits); 0: vLLM's default, 512;
	// negative: no full CUDA graphs (eager or piecewise only), where vLLM
	// passes none. Only the FA4 terms read it (fa4.go).
	CaptureTokens int
}

// triton returns the Triton attention terms attention op o is priced
// with: where Kernels.Attention names the Triton kernel, or, on a device
// whose default is FlashInfer's TRT-LLM kernels, for a head dim they lack
// (vLLM's backend selection then falls to TRITON_ATTN: AIConfigurator's
// B200 rows at head dim 192 with an FP8 cache); nil otherwise.
func (r Roofline) triton(o *spec.Op) *TritonAttn {
	t := r.Device.Curves.TritonAttention
	switch {
	case t == nil || (r.AttentionBackend != "" && r.AttentionBackend != "TRITON_ATTN"):
		return nil
	case r.Kernels.Attention == AttentionTriton || r.AttentionBackend == "TRITON_ATTN":
		return t
	case r.Kernels.Attention == "" && r.Device.Curves.TRTLLM != nil && !trtllmHeadDim(o.HeadDim):
		return t
	}
	return nil
}

// trtllmHeadDim reports whether FlashInfer's TRT-LLM attention kernels
// run head dim hd (AIConfigurator's B200 rows: 64, 128, 256 and 512).
func trtllmHeadDim(hd int) bool {
	return hd == 64 || hd == 128 || hd == 256 || hd == 512
}

// trtllm returns the TRT-LLM attention terms attention is priced with,
// nil when the device has none, the backend is not vLLM's FLASHINFER or
// another kernel is named (Kernels.Attention).
func (r Roofline) trtllm() *TRTLLMAttn {
	if r.AttentionBackend != "" && r.AttentionBackend != "FLASHINFER" {
		return nil
	}
	if r.Kernels.Attention != "" && r.Kernels.Attention != AttentionTRTLLM {
		return nil
	}
	return r.Device.Curves.TRTLLM
}

// fa4 returns the FlashAttention-4 terms attention op o is priced with: a
// head dim over FA3's 256 where Kernels.Attention names FA4 or FA3 (vLLM
// 0.24.0 on Hopper, whose get_flash_attn_version gives such a head size
// FA4: fa_utils.py, get_flash_attn_version); nil otherwise (FA4's terms
// are measured at head dim 512 only).
func (r Roofline) fa4(o *spec.Op) *FA4 {
	f := r.Device.Curves.FA4
	if f == nil || o.HeadDim <= fa3MaxHeadDim || (r.AttentionBackend != "" && r.AttentionBackend != "FLASH_ATTN") {
		return nil
	}
	if r.Kernels.Attention == AttentionFA4 || r.Kernels.Attention == AttentionFA3 {
		return f
	}
	return nil
}

// fa2 returns the FlashAttention-2 terms attention op o is priced with:
// where Kernels.Attention names FA2 (vLLM's FLASH_ATTN on Ampere under a
// given version, KernelsFor), the backend is FLASH_ATTN and the KV cache
// is 16-bit; nil otherwise (the device's default: on Ampere the attention
// classes' curves). An FP8 cache is not FA2's: vLLM's FlashAttention
// backend takes one only where FA3 runs (flash_attn.py,
// supports_kv_cache_dtype, flash_attn_supports_fp8), so on Ampere vLLM
// picks another backend, which these terms were not fitted on.
func (r Roofline) fa2(o *spec.Op) *FA2 {
	if r.Kernels.Attention != AttentionFA2 || o.ElemBytes == 1 || (r.AttentionBackend != "" && r.AttentionBackend != "FLASH_ATTN") {
		return nil
	}
	return r.Device.Curves.FA2
}

// fa3MaxHeadDim is the largest head dim FlashAttention-3 runs.
const fa3MaxHeadDim = 256

// fa3 returns the FlashAttention-3 terms attention is priced with, nil
// when the device has none or the backend is not FLASH_ATTN.
func (r Roofline) fa3() *FA3 {
	if r.AttentionBackend != "" && r.AttentionBackend != "FLASH_ATTN" {
		return nil
	}
	f := r.Device.Curves.FA3
	if f != nil && f.ByKernel[r.Kernels.Attention] != nil {
		return f.ByKernel[r.Kernels.Attention]
	}
	return f
}

// customAllReduceMaxBytes is vLLM's default custom all-reduce buffer limit
// (8 MiB, vllm/distributed/device_communicators/custom_all_reduce.py).
const customAllReduceMaxBytes = 8 << 20

// KernelMs returns the GPU time of op for features x, in milliseconds:
// what a KERNEL_ONLY measurement sees.
func (r Roofline) KernelMs(o *spec.Op, x []float64) float64 {
	if o.Name == spec.OpCPUOverhead || o.Kernels == 0 {
		return 0
	}
	d := r.Device
	c := d.Curves.Class[ClassOf(o.Name)]
	if o.Name == spec.OpMoERoutingTopK {
		c = d.Curves.routingCurve(o)
	}
	if s := d.Curves.KVCacheSave; s != nil && o.Name == spec.OpAttnKVCacheSave && len(x) > 0 && o.KVHeads > 0 && o.HeadDim <= fa3MaxHeadDim && d.SMs > 0 {
		return s.us(o, x, c, d, r.Kernels.Attention) / 1e3 // kvcachesave.go
	}
	flops, bytes := o.Work(x)
	if r.customAllReduce(o, bytes) {
		return r.customAllReduceUs(o, bytes) / 1e3 // customar.go
	}
	floorUs := float64(o.Kernels) * c.FloorUs
	if r.LegacyStack && c.LegacyFloorUs > 0 {
		floorUs = float64(o.Kernels) * c.LegacyFloorUs
	}
	qkNormUs := 0.0
	if qkNorm(o) {
		floorUs, qkNormUs = c.FloorUs, r.qkNormUs(o, x)
	}
	if o.Family == spec.FamilyCollective {
		if o.CrossNode && c.NetFloorUs > 0 {
			floorUs = float64(o.Kernels) * c.NetFloorUs
		}
		if r.pcieAllReduce(o) {
			return r.pcieAllReduceUs(o, bytes, c) / 1e3 // NCCL's model (pcie_collective.go)
		}
		return (floorUs + r.collectiveUs(o, bytes, c)) / 1e3
	}
	if us, ok := r.flashInferMoEUs(o, x); ok {
		return us / 1e3 // moeblackwell.go
	}
	if us, ok := r.hopperCutlassMoEUs(o, x); ok {
		return us / 1e3 // moecutlasshopper.go
	}
	if s := r.tritonMoE(o); s != nil {
		if us, ok := r.tritonMoEUs(s, o, x); ok {
			return us / 1e3 // moetriton.go
		}
	}
	if f := r.fa4(o); f != nil && d.SMs > 0 && len(x) > 1 {
		switch o.Name {
		case spec.OpAttnDecode:
			return f.decodeUs(o, x, d.SMs, d.HBMGBps, r.CaptureTokens) / 1e3 // fa4.go
		case spec.OpAttnPrefill:
			return f.prefillUs(o, x, d.SMs, d.HBMGBps, r.CaptureTokens) / 1e3
		}
	}
	if f := r.fa2(o); f != nil && d.SMs > 0 && len(x) > 1 {
		switch o.Name {
		case spec.OpAttnDecode:
			return f.decodeUs(o, x, d.SMs, d.HBMGBps) / 1e3 // fa2.go
		case spec.OpAttnPrefill:
			return f.prefillUs(o, x, d.SMs, d.HBMGBps) / 1e3
		}
	}
	if f := r.fa3(); f != nil && d.SMs > 0 && len(x) > 1 {
		switch o.Name {
		case spec.OpAttnDecode:
			return f.decodeUs(o, x, d.SMs, d.HBMGBps) / 1e3 // fa3.go
		case spec.OpAttnPrefill:
			return f.prefillUs(o, x, d.SMs, d.HBMGBps) / 1e3
		}
	}
	if c, ok := r.cutlassFP8GEMM(o); ok && len(x) > 0 {
		return (r.CutlassFP8Us(c, o, x[0]) + qkNormUs + r.servedActQuantUs(o, x)) / 1e3 // cutlassfp8.go
	}
	if r.cuBLASGEMM(o) && len(x) > 0 {
		return (r.cuBLASUs(o, x[0]) + qkNormUs) / 1e3 // cublas.go
	}
	if t := r.triton(o); t != nil && d.SMs > 0 && len(x) > 1 {
		switch o.Name {
		case spec.OpAttnDecode:
			return t.decodeUs(o, x, d.SMs) / 1e3 // tritonattn.go
		case spec.OpAttnPrefill:
			return t.prefillUs(o, x, d.SMs) / 1e3
		}
	}
	if t := r.trtllm(); t != nil && d.SMs > 0 && len(x) > 1 {
		switch o.Name {
		case spec.OpAttnDecode:
			return t.decodeUs(o, x, d.SMs, d.HBMGBps, r.WarmKV) / 1e3 // trtllmattn.go
		case spec.OpAttnPrefill:
			if us, ok := t.prefillUs(o, x, d.SMs, d.HBMGBps, r.WarmKV); ok {
				return us / 1e3
			}
		}
	}
	if o.Name == spec.OpAttnPrefill && c.IterUs > 0 && d.SMs > 0 && len(x) > 1 {
		return flashInferPrefillUs(o, x, c, d.SMs, d.HBMGBps) / 1e3 // attnprefill.go
	}
	computeUs := 0.0
	if flops > 0 && c.ComputeEff > 0 {
		fp8 := o.FP8 && d.PeakFP8TFLOPS > 0 && d.Curves.FP8ComputeEff > 0
		roof := c.ComputeEff
		if fp8 {
			roof = d.Curves.fp8Roof(o)
		}
		roof = d.ScaledRoof(roof) // matmulrate.go
		eff := roof
		switch {
		case o.N > 0:
			// GEMMs run in whole waves of output tiles over the SMs.
			eff *= r.waveUtilisation(x[0], o.N, o.K)
		case c.TileLoadShare > 0 && o.Name == spec.OpMoEGroupedGEMM:
			eff *= groupedGEMMEfficiency(o, x, c.TileLoadShare*r.ridgeRows(o, roof, fp8, c.MemEff), r.moeTileEff(o, x, fp8))
		case c.HalfFLOPs > 0:
			eff *= flops / (flops + c.HalfFLOPs)
		}
		computeUs = flops / (d.PeakTFLOPS(fp8) * 1e12 * eff) * 1e6
	}
	hbmBps := d.HBMGBps * 1e9 * c.MemEff
	if r.LegacyStack && c.LegacyGatherEff > 0 && o.Name == spec.OpEmb && len(x) > 0 && x[0] > smallIndexMax {
		hbmBps = d.HBMGBps * 1e9 * c.LegacyGatherEff
	}
	memUs := math.Max(bytes-c.L2ResidentMB*1e6, 0) / hbmBps * 1e6
	if c.L2Gain > 0 {
		// Every byte also passes the L2 (Curve.L2Gain): a hierarchical
		// roofline, the L2 roof over all bytes, HBM's over the rest.
		memUs = math.Max(memUs, bytes/(hbmBps*c.L2Gain)*1e6)
	}
	if c.RowUs > 0 && len(x) > 0 && ClassOf(o.Name) == ClassNorm && !r.Compiled {
		memUs = math.Max(memUs, x[0]*c.RowUs)
	}
	if c.SmallIndexUs > 0 && len(x) > 0 && x[0] <= smallIndexMax {
		memUs = math.Max(memUs, x[0]*c.SmallIndexUs)
	}
	memUs = math.Max(memUs, r.tileL2Us(o, x, c)) // tilel2.go
	if iters := gemmKLoop(o); c.IterUs > 0 && iters > 0 {
		if len(x) > 0 {
			iters = r.splitKLoop(o, iters, x[0]) // skinnygemm.go
		}
		memUs = math.Max(memUs, iters*c.IterUs)
		if c.WarmFloorUs > 0 && r.weightsInL2(o) {
			// Weights still in the L2 from the block before (warml2.go).
			floorUs += c.WarmFloorUs - c.FloorUs
			memUs = bytes/(hbmBps*c.L2Gain)*1e6 + iters*c.IterUs
		}
	}
	if iters := fusedMoEKLoop(o, x); c.IterUs > 0 && iters > 0 {
		memUs = math.Max(memUs, iters*c.IterUs)
	}
	if iters, extra := alignLoop(o, x); c.IterUs > 0 && iters > 0 {
		floorUs += float64(extra) * c.FloorUs
		memUs = math.Max(memUs, iters*c.IterUs)
	}
	if iters, threads := tokenBlockLoop(o); c.IterUs > 0 && iters > 0 && len(x) > 0 {
		// Blocks of threads threads, as many as fit the SMs at once, each
		// looping iters times: whole waves of them.
		resident := float64(d.SMs) * math.Floor(maxThreadsPerSM/threads)
		memUs = math.Max(memUs, math.Ceil(x[0]/resident)*iters*c.IterUs)
		// Many tokens: blocks retire and refill the SMs continuously,
		// each iteration at its loaded latency (Curve.FullIterUs).
		memUs = math.Max(memUs, x[0]/resident*iters*c.FullIterUs)
	}
	epilogueUs := 0.0
	if e := r.fusedMoEEpilogueUs(o, x); e > 0 {
		// The two GEMM launches on this curve; the activation and the
		// sum after them on their own (moeepilogue.go).
		floorUs, epilogueUs = 2*c.FloorUs, e
	}
	// An FP8 layer's standalone activation quantization (fp8linear.go).
	floorUs += r.servedActQuantUs(o, x)
	return (floorUs + qkNormUs + math.Max(computeUs, memUs) + epilogueUs) / 1e3
}

// maxThreadsPerSM is the resident threads of one SM on Ampere (sm_80) and
// Hopper (sm_90) (CUDA C++ Programming Guide, "Compute Capabilities"; Ada's
// sm_89 holds 1,536: an approximation there).
const maxThreadsPerSM = 2048

// tokenBlockLoop returns, for vLLM's kernels that run one thread block per
// token, the iterations of a block's loop over its token and the block's
// threads; 0 for other operators.
//   - SiLU-and-mul: a block of min(d, 1024) threads over the d outputs
//     (vllm csrc/activation_kernels.cu: grid(num_tokens),
//     block(std::min(d, 1024)));
//   - rotary embedding: a block of min(pairs, 512) threads over the
//     token's (q + k heads) x rot_dim / 2 rotation pairs (vllm
//     csrc/pos_encoding_kernels.cu: grid(num_tokens),
//     block(std::min<int64_t>(num_heads * rot_dim / 2, 512)));
//   - RMSNorm: a block of min(hidden, 1024) threads that loops over the
//     token's hidden elements twice, once for the sum of squares and once
//     to scale them (vllm csrc/layernorm_kernels.cu, rms_norm_kernel:
//     grid(num_tokens), block(std::min(hidden_size, 1024))). Few tokens
//     leave the time flat (the H800 profiles: 2.4-3.5 us from 1 to 128
//     tokens); many grow by whole waves of blocks (Vidur's H100 rows: 4, 7,
//     13, 25 us at 256, 512, 1,024, 2,048 tokens: one, two, four and eight
//     waves of 264 resident blocks).
func tokenBlockLoop(o *spec.Op) (iters, threads float64) {
	var work, most, passes float64 = 0, 0, 1
	switch ClassOf(o.Name) {
	case ClassAct:
		work, most = float64(o.Width), 1024
	case ClassRope:
		work, most = float64(o.Width)/2, 512
	case ClassNorm:
		work, most, passes = float64(o.Width), 1024, 2
	default:
		return 0, 0
	}
	if work <= 0 {
		return 0, 0
	}
	threads = math.Min(work, most)
	return passes * math.Ceil(work/threads), threads
}

// smallIndexMax is the most indices PyTorch's index_select gathers with
// its small-index kernel (Curve.SmallIndexUs).
const smallIndexMax = 16

// EventMs returns what a CUDA_EVENT measurement of op in isolation sees:
// the host reaching the kernel's launch and then the kernel, or the host
// reaching the end event when that is later (Curve).
//
// With BusyUs set, the GPU is that far behind the host when the start event
// is recorded (an op timed right after a long kernel, eventchain.go).
func (r Roofline) EventMs(o *spec.Op, x []float64) float64 {
	pre, host := r.hostTerms(o)
	us, _ := eventUs(pre, host, r.KernelMs(o, x)*1e3, r.BusyUs, r.Device.Curves.EventGapUs)
	return us / 1e3
}

// LaunchMs is the host time to launch op's kernels eagerly.
func (r Roofline) LaunchMs(o *spec.Op) float64 {
	return float64(o.Kernels) * r.Device.LaunchUs / 1e3
}

// TimeMs returns the op's time under a measurement type.
func (r Roofline) TimeMs(o *spec.Op, x []float64, measurement string) float64 {
	if measurement == spec.KernelOnly {
		return r.KernelMs(o, x)
	}
	return r.EventMs(o, x)
}

// ContextTimeMs is TimeMs under a MoE runtime contract (docs/formats.md): a
// standalone_legacy gating op, timed cold, pays the generation's
// ColdHostFactor times its host terms in CUDA_EVENT timings (its kernels
// are the same),
// and the uniform_topk routing path runs one kernel per expert choice
// instead of the standard fused top-k's three.
func (r Roofline) ContextTimeMs(o *spec.Op, x []float64, measurement, gatingContext, routingPath string) float64 {
	op := contextOp(o, routingPath)
	if f := r.Device.Curves.ColdHostFactor; f > 0 && gatingContext == spec.GatingStandalone && (op.Name == spec.OpMoEGatingLinear || op.Name == spec.OpMoERoutingTopK) {
		cold := *r.Device
		cold.LaunchUs *= f
		h := cold.Curves.host(op.Name)
		cold.Curves.Host = map[string]HostTerms{op.Name: {PreUs: h.PreUs * f, Us: h.Us * f}}
		r.Device = &cold
	}
	return r.TimeMs(&op, x, measurement)
}

// contextOp is o as run on routing path routingPath: the profilers'
// round-robin (uniform_topk) assignment runs about one kernel per expert
// choice; on the H800 profiles it takes 52-56 us at top-8 (Qwen3) and
// 16 us at top-2 (Phi-tiny-MoE), KERNEL_ONLY.
func contextOp(o *spec.Op, routingPath string) spec.Op {
	op := *o
	if op.Name == spec.OpMoERoutingTopK && routingPath == spec.RoutingPathUniform {
		op.Kernels = max(1, op.TopK)
		op.UniformRouting = true
	}
	return op
}

// routingCurve returns the kernel curve of top-k routing op o. The
// routing class's curve is fitted on the profiles'
// uniform_topk rows only (every MoE file in testdata; 1-64 tokens, flat
// at 52-56 us for top-8 on the H800), so its per-token slope is an
// extrapolation: priced through it, vLLM's fused top-k took 1.5 ms a layer
// for a 2,048-token chunk on an RTX 4090 D and 27 us at 8 tokens. vLLM
// runs its standard path (FusedMoE with a softmax router) as one
// topk_softmax CUDA kernel, one warp per token over the expert logits
// (csrc/moe/topk_softmax_kernels.cu), plus the renormalisation's
// element-wise kernels: per-token row reductions like RMSNorm, so the
// standard path is priced with the norm class's curve (a stated
// approximation; no profile in testdata times it). Cross-checks
// (TestFusedTopKAgainstPublished): Megatron-LM PR #6456 (August 2026)
// times softmax + top-8 of a [256, 128] fp32 router output under CUDA-graph
// replay at 16.41 us as four PyTorch kernels and 4.10 us as one fused
// kernel; vLLM PR #34206 (February 2026, H200, DeepSeek-R1) times its
// grouped_topk_fused_kernel at about 7 us and the small-expert-count one
// at about 4 us.
func (c *Curves) routingCurve(o *spec.Op) Curve {
	if o.UniformRouting {
		return c.Class[ClassMoERouting]
	}
	return c.Class[ClassNorm]
}

// waveUtilisation is the fraction of the tensor cores doing useful work in
// a GEMM with 128x128 output tiles (64 token rows at decode sizes,
// skinnygemm.go; the generation's own tiles where it has them,
// gemmtiles.go): the tiles' padding past the matrix
// edges is wasted, and so is the idle part of the last wave of tiles over
// the SMs. When there are fewer tiles than SMs the K dimension is split
// (split-K, as cuBLAS does) into chunks of at least 256 to occupy more SMs.
func (r Roofline) waveUtilisation(tokens float64, n, k int) float64 {
	sms := float64(r.Device.SMs)
	tile := gemmTile(r.Device.Curves.GEMMTiles, tokens, n, sms)
	tm, tn := math.Ceil(tokens/tile.Rows), math.Ceil(float64(n)/tile.Cols)
	tiles := tm * tn
	if tiles <= 0 {
		return 1
	}
	padding := tokens * float64(n) / (tiles * tile.Rows * tile.Cols)
	tiles *= r.splitK(tokens, n, k)
	waves := math.Ceil(tiles / sms)
	return padding * tiles / (waves * sms)
}

// splitK is how many ways a GEMM with fewer output tiles than SMs splits
// its K dimension (at least 256 of K a split): 1 when the tiles fill the
// SMs.
func (r Roofline) splitK(tokens float64, n, k int) float64 {
	sms := float64(r.Device.SMs)
	tile := gemmTile(r.Device.Curves.GEMMTiles, tokens, n, sms)
	tiles := math.Ceil(tokens/tile.Rows) * math.Ceil(float64(n)/tile.Cols)
	if tiles <= 0 || tiles >= sms {
		return 1
	}
	return math.Max(1, math.Min(math.Floor(sms/tiles), math.Floor(float64(k)/256)))
}

// customAllReduce reports whether vLLM runs o as its custom all-reduce:
// 2, 4, 6 or 8 GPUs of one node over NVLink, under its size limit (8
// MiB; Blackwell's: customar.go), or on symmetric memory. Without NVLink
// it is NCCL over PCIe (pcie_collective.go; vLLM also allows the custom
// kernel for two PCIe GPUs with peer-to-peer access, which ftk does not
// model: GeForce cards have none).
func (r Roofline) customAllReduce(o *spec.Op, bytes float64) bool {
	return !r.NCCL && o.Name == spec.OpAllReduce && !o.CrossNode && o.Workers <= 8 && o.Workers%2 == 0 &&
		r.Device.NVLink && r.Device.Curves.CustomAllReduce.Takes(o.Workers, bytes)
}

// collectiveUs is the transfer time of a collective: ring all-reduce
// moves 2(n-1)/n of the buffer, all-to-all (n-1)/n, send/recv all of it,
// over NVLink within a node or the network across nodes.
func (r Roofline) collectiveUs(o *spec.Op, bytes float64, c Curve) float64 {
	if o.Name == spec.OpEPDispatch || o.Name == spec.OpEPCombine {
		return r.epExchangeUs(o, bytes, c)
	}
	n := float64(max(o.Workers, 2))
	link := r.Device.NVLinkGBps
	if o.CrossNode {
		link = r.Device.NetworkGBps
	}
	var factor float64
	switch o.Name {
	case spec.OpAllReduce:
		factor = 2 * (n - 1) / n
	case spec.OpSendRecv:
		factor = 1
	default: // EP dispatch / combine
		factor = (n - 1) / n
	}
	return factor * bytes / (link * 1e9 * c.MemEff) * 1e6
}
