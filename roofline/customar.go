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
type CustomAllReduce struct {
	OneShotFloorUs, OneShotEff float64 // launch and barriers; fraction of NVLink reached
	TwoShotFloorUs, TwoShotEff float64
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

// oneShot reports whether vLLM runs the one-stage kernel for bytes over
// workers GPUs.
func (CustomAllReduce) oneShot(workers int, bytes float64) bool {
	return workers == 2 || (workers <= 4 && bytes < 512<<10) || (workers <= 8 && bytes < 256<<10)
}

// kernelUs is the kernel time, in microseconds, of the custom all-reduce
// of bytes over workers GPUs of NVLink bandwidth nvlinkGBps.
func (c CustomAllReduce) kernelUs(workers int, bytes, nvlinkGBps float64) float64 {
	n := float64(workers)
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
