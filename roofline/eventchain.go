package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// A CUDA event pair around an eager op reads from the moment the GPU
// reaches the start event to the moment it reaches the end event. When
// earlier kernels are still queued as the start event is recorded (the GPU
// is busyUs behind the host), the start event waits for them on the GPU
// while the host goes on issuing, so part or all of the op's host time is
// hidden: the pair reads
//
//	max(max(gap, pre - busy) + kernel, host - busy)
//
// where pre and host are the op's host terms (Curve) and gap is
// Curves.EventGapUs, the GPU time from a start event to the kernel and
// from the kernel to the end event when the stream is already busy. With
// busy <= 0 this is EventMs's max(pre + kernel, host).
//
// Profilers time ops this way one after another: Vidur's MLP profiler
// (and Frontier's linear-op profiler, forked from it) runs the model's
// forward pass in a loop with a CudaTimer (start and end events) around
// each op and synchronises only after all passes
// (microsoft/vidur vidur/profiling/mlp/mlp_wrapper.py, profile();
// vidur/profiling/common/cuda_timer.py; the forward order is mlp_impl.py's
// GPTModel: the embedding twice, then input norm, QKV projection, rotary,
// output projection, post-attention norm, MLP up, activation, down, add).
// A long kernel (a 35 us QKV projection of Llama-2-7B at TP1, issued in
// 60 us of host time but ending 70 us after its start event) leaves the
// GPU behind, and the op after it reads its kernel time plus the gap
// rather than its own host time: Llama-2-7B's rotary embedding reads 9 us
// at TP1 and 21 us at TP2-8, its SiLU-and-mul 9 us after the 65 us TP1
// up projection and 23 us after the 13 us TP8 one.

// EventStep is one op of an eager sequence with its features.
type EventStep struct {
	Op *spec.Op
	X  []float64
	// IdleHostUs is host time spent before the step outside any timed op
	// (Python between timers, the loop between passes): the GPU catches up
	// by that much.
	IdleHostUs float64
	// Untimed: the step's kernel (Op may be nil: none) is issued at the end
	// of IdleHostUs with no event pair around it (an op the profiler runs
	// but does not time); its reading is 0.
	Untimed bool
	// Sync: the host waits for the GPU to drain before the step
	// (torch.cuda.synchronize), so the step starts with the GPU idle: a
	// profiler that synchronises after its warm-up passes and times a few
	// passes after it sees the GPU fall behind pass by pass, not a steady
	// state.
	Sync bool
}

// eventUs is what a CUDA event pair reads around a kernel of kernelUs
// with host terms preUs and hostUs when the GPU is busyUs behind the host
// at the start event, and how far behind the host the GPU is when the
// host moves on to the next op (the header).
func eventUs(preUs, hostUs, kernelUs, busyUs, gapUs float64) (readUs, nextBusyUs float64) {
	startUs := preUs
	if busyUs > 0 {
		startUs = math.Max(busyUs+gapUs, preUs)
	}
	endUs := math.Max(startUs+kernelUs, hostUs)
	return endUs - math.Max(busyUs, 0), endUs - hostUs
}

// hostTerms are op's CUDA_EVENT host terms with the host time of its extra
// kernels (Curves.KernelHostUs), microseconds.
func (r Roofline) hostTerms(o *spec.Op) (preUs, hostUs float64) {
	h := r.Device.Curves.host(o.Name)
	extraUs := float64(max(o.Kernels-1, 0)) * r.Device.Curves.KernelHostUs
	return h.PreUs + extraUs, h.Us + extraUs
}

// EventSequence prices steps run back to back eagerly, over and over with
// no synchronisation (a profiler's forward pass in a loop), each timed with
// a CUDA event pair: for each step, what the pair reads (ms) and how far
// the GPU is behind the host at its start event (us; Roofline.BusyUs), in
// the steady state of the loop (with a Sync step, the loop restarts from an
// idle GPU at it).
func (r Roofline) EventSequence(steps []EventStep) (ms, busyUs []float64) {
	ms, busyUs = make([]float64, len(steps)), make([]float64, len(steps))
	gap := r.Device.Curves.EventGapUs
	busy := 0.0
	for pass := 0; pass < 50; pass++ {
		start := busy
		for i, s := range steps {
			if s.Sync {
				busy = math.Min(busy, 0)
			}
			busy -= s.IdleHostUs
			if s.Untimed {
				busy = math.Max(busy, 0)
				busyUs[i], ms[i] = busy, 0
				if s.Op != nil {
					busy += r.KernelMs(s.Op, s.X) * 1e3
				}
				continue
			}
			pre, host := r.hostTerms(s.Op)
			busyUs[i] = math.Max(busy, 0)
			var read float64
			read, busy = eventUs(pre, host, r.KernelMs(s.Op, s.X)*1e3, busy, gap)
			ms[i] = read / 1e3
		}
		if math.Abs(busy-start) < 1e-6 {
			break
		}
	}
	return ms, busyUs
}
