package roofline

import "github.com/ftk-dev/ftk/spec"

// CustomAllReduce is vLLM's custom all-reduce (csrc/custom_all_reduce.cuh,
// CustomAllreduce::allreduce): on 2 GPUs, or on 4 GPUs under 512 KiB and 6
// or 8 under 256 KiB, the one-stage kernel, in which every GPU reads the
// whole buffer from each peer and reduces it ((n-1) x bytes over NVLink);
// else the two-stage kernel, a reduce-scatter then an all-gather through
// the peers' buffers (2(n-1)/n x bytes). vLLM takes it for buffers under
// its 8 MiB limit (custom_all_reduce.py, should_custom_ar: inp_size <
// max_size), NCCL past it.
//
// Where vLLM also has PyTorch's symmetric-memory all-reduce
// (SymmMemEff > 0), the custom kernel's limit is vLLM's per-architecture
// table (MaxBytes) and the all-reduces from there up to SymmMemMaxBytes
// run on symmetric memory (vllm/distributed/device_communicators/
// all_reduce_utils.py, CUSTOM_ALL_REDUCE_MAX_SIZES and
// SYMM_MEM_ALL_REDUCE_MAX_SIZES; cuda_communicator.py tries the custom
// kernel first, then symmetric memory, then NCCL).
type CustomAllReduce struct {
	OneShotFloorUs, OneShotEff float64 // launch and barriers; fraction of NVLink reached
	TwoShotFloorUs, TwoShotEff float64
	// MaxBytes is the custom kernel's limit on 2, 4, 6 and 8 GPUs
	// (index GPUs/2 - 1): it runs buffers under it; zero:
	// customAllReduceMaxBytes (8 MiB).
	MaxBytes [4]float64
	// SymmMemFloorUs and SymmMemEff price the symmetric-memory
	// all-reduce (2(n-1)/n of the buffer over NVLink at SymmMemEff of
	// it) of buffers from MaxBytes to under SymmMemMaxBytes (same
	// index); SymmMemEff 0: none, NCCL past MaxBytes.
	SymmMemFloorUs, SymmMemEff float64
	SymmMemMaxBytes            [4]float64
	// ServedWaitUs is what each all-reduce of a served step adds at its
	// entry barrier, where the GPUs arrive from their own kernels at
	// different times. A guess, not fitted: it keeps the small all-reduce
	// of a served step at the 8 us the public end-to-end points were
	// replayed with before the kernel terms were fitted. The kernel
	// tables time all-reduces back to back (Roofline.CollectivesAligned),
	// without it.
	ServedWaitUs float64
}

// hopperCustomAllReduce is fitted on AIConfigurator's vLLM 0.14.0 H100 SXM
// custom_allreduce_perf rows replayed in a CUDA graph, under 8 MiB (45
// rows: TP2/4/8, 256 B to 4 MiB; collect_all_reduce.py: five all-reduces
// of distinct buffers a graph replay, 20 replays, latency / 100),
// least squares of the relative error by Nelder-Mead with every fifth row
// held out: TestCustomAllReduceRefit (cost).
var hopperCustomAllReduce = CustomAllReduce{
	OneShotFloorUs: 4.53, OneShotEff: 0.604, TwoShotFloorUs: 11.58, TwoShotEff: 0.876, ServedWaitUs: 3.47,
}

// maxBytes is the custom kernel's limit on workers GPUs.
func (c CustomAllReduce) maxBytes(workers int) float64 {
	if i := workers/2 - 1; i >= 0 && i < len(c.MaxBytes) && c.MaxBytes[i] > 0 {
		return c.MaxBytes[i]
	}
	return customAllReduceMaxBytes
}

// symmMem reports whether vLLM runs the all-reduce of bytes over workers
// GPUs on symmetric memory.
func (c CustomAllReduce) symmMem(workers int, bytes float64) bool {
	i := workers/2 - 1
	return c.SymmMemEff > 0 && i >= 0 && i < len(c.SymmMemMaxBytes) && bytes >= c.maxBytes(workers) && bytes < c.SymmMemMaxBytes[i]
}

// Takes reports whether vLLM runs the all-reduce of bytes over workers
// GPUs as its custom kernel or on symmetric memory.
func (c CustomAllReduce) Takes(workers int, bytes float64) bool {
	return c.OneShotEff > 0 && (bytes < c.maxBytes(workers) || c.symmMem(workers, bytes))
}

// oneShot reports whether vLLM runs the one-stage kernel for bytes over
// workers GPUs.
func (CustomAllReduce) oneShot(workers int, bytes float64) bool {
	return workers == 2 || (workers <= 4 && bytes < 512<<10) || (workers <= 8 && bytes < 256<<10)
}

// kernelUs is the kernel time, in microseconds, of the custom all-reduce
// of bytes over workers GPUs of NVLink bandwidth nvlinkGBps.
func (c CustomAllReduce) kernelUs(workers int, bytes, nvlinkGBps float64) float64 {
	n := float64(workers)
	if c.symmMem(workers, bytes) {
		return c.SymmMemFloorUs + 2*(n-1)/n*bytes/(nvlinkGBps*1e3*c.SymmMemEff)
	}
	if c.oneShot(workers, bytes) {
		return c.OneShotFloorUs + (n-1)*bytes/(nvlinkGBps*1e3*c.OneShotEff)
	}
	return c.TwoShotFloorUs + 2*(n-1)/n*bytes/(nvlinkGBps*1e3*c.TwoShotEff)
}

// customAllReduceUs is the time of custom all-reduce o of bytes.
func (r Roofline) customAllReduceUs(o *spec.Op, bytes float64) float64 {
	c := r.Device.Curves.CustomAllReduce
	us := c.kernelUs(max(o.Workers, 2), bytes, r.Device.NVLinkGBps)
	if !r.CollectivesAligned {
		us += c.ServedWaitUs
	}
	return us
}

// mib is a mebibyte, in bytes.
const mib = 1 << 20

// blackwellCustomAllReduce is fitted on AIConfigurator's vLLM 0.24.0 B200
// SXM custom_allreduce_perf rows replayed in a CUDA graph (the same
// collector as Hopper's), the 51 that vLLM runs as its custom kernel or
// on symmetric memory, least squares of the relative error by
// Nelder-Mead with every fifth row held out: TestCustomAllReduceRefit
// (cost). vLLM's limits on compute capability 10.0 (all_reduce_utils.py):
// the custom kernel under 2 MiB on 2 and 4 GPUs, 1 MiB on 6 and 8;
// symmetric memory under 8 MiB on 2 GPUs, 32 MiB on 4, 128 MiB on 6 and
// 8. The rows show both limits: on 2 GPUs 13.1 us at 1 MiB, 25.3 us at 2
// MiB; on 8 GPUs 111 us at 32 MiB, 223 at 64, 442 at 128 (NCCL).
// ServedWaitUs is Hopper's (a guess: see there).
var blackwellCustomAllReduce = CustomAllReduce{
	OneShotFloorUs: 6.988, OneShotEff: 0.3082, TwoShotFloorUs: 15.54, TwoShotEff: 0.3554,
	MaxBytes:       [4]float64{2 * mib, 2 * mib, 1 * mib, 1 * mib},
	SymmMemFloorUs: 14.23, SymmMemEff: 0.6257,
	SymmMemMaxBytes: [4]float64{8 * mib, 32 * mib, 128 * mib, 128 * mib},
	ServedWaitUs:    hopperCustomAllReduce.ServedWaitUs,
}

// ampereCustomAllReduce is fitted the same way on AIConfigurator's vLLM
// 0.14.0 A100 SXM custom_allreduce_perf rows replayed in a CUDA graph under
// 8 MiB (45 rows: TP2/4/8, 256 B to 4 MiB), every fifth held out
// (TestCustomAllReduceRefit, cost): fitted 5.1%, held out 13.5% (bias
// -9.9%; one held-out row, 8 GPUs at 4 KiB, takes 14.8 us where its
// neighbours take 5.6-6.3); Hopper's terms price the whole table at 14.8%
// (-14.3%). The A100 is a check without a target: these terms are fitted on
// four rows in five of its own table. The two-stage kernel reaches the
// whole of NVLink 3's 300 GB/s a direction (1.00). The kernel
// (csrc/custom_all_reduce.cuh) is the same at every vLLM version ftk
// prices, so the terms apply with or without --vllm-version, as Hopper's
// do; ServedWaitUs is Hopper's (a guess: see there).
var ampereCustomAllReduce = CustomAllReduce{OneShotFloorUs: 5.243, OneShotEff: 0.635, TwoShotFloorUs: 15.6, TwoShotEff: 1.002, ServedWaitUs: hopperCustomAllReduce.ServedWaitUs}
