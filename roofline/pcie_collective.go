package roofline

import "github.com/ftk-dev/ftk/spec"

// All-reduce over PCIe. On GPUs without NVLink vLLM runs the TP all-reduce
// with NCCL: its custom all-reduce turns itself off for more than two
// PCIe-only GPUs ("Custom allreduce is disabled because it's not supported
// on more than two PCIe-only GPUs", vllm/distributed/device_communicators/
// custom_all_reduce.py, v0.10-0.11) and its symmetric-memory all-reduce
// needs compute capability 9.0 or 10.0 (symm_mem.py: "Device capability
// 8.9 not supported"). The Vidur NCCL rows the all-reduce class is fitted
// on are H100 NVLink timings taken through torch.distributed; for a PCIe
// ring the GPU time is priced with NCCL's own model instead, the one NCCL
// picks its algorithm and protocol with (src/graph/tuning.cc, NVIDIA/nccl
// at b6475625, the 2.18-2.19 series): a ring all-reduce of n ranks takes
// 2(n-1) steps, costs a base latency plus a per-step PCIe latency, and
// moves 2(n-1)/n of the buffer at the protocol's bus bandwidth:
//
//   - LL (small messages): base 6.6 us, 1.0 us a PCIe step, a quarter of
//     the bus bandwidth (half of every 8-byte word is a flag, and NCCL's
//     model takes 1/4 for ring LL all-reduce);
//   - Simple (large messages): base 8.4 us, 5.7 us a PCIe step, the bus
//     bandwidth.
//
// NCCL takes the faster of the two. The bus bandwidth is the device's
// PCIe link (Device.NVLinkGBps on a device without NVLink) at the
// all-reduce class's MemEff. Under a CUDA-graph replay this is the whole
// cost; eager execution adds the host's issue on the CPU timeline (the
// collective kernel kind in roofline/issuecost.go).
//
// Cross-check: 4 x RTX 4090 on PCIe 4.0 x16 reach 25.7 GB/s of NCCL
// all-reduce bus bandwidth at 256 MB-2 GB (tinygrad/open-gpu-kernel-modules
// issue #36, 2025, nccl-tests all_reduce_perf -g 4): 32 GB/s x 0.778 = 24.9.
// nccl-tests' small-message times (42.6 us at 8 bytes on 8 x RTX 4090,
// NVIDIA/nccl issue #1530, 2024) are not used: one thread launches all
// eight GPUs' kernels every iteration (-g 8, graph 0), so they hold the
// host's launches, which a graph replay does not pay.
const (
	ncclRingLLBaseUs     = 6.6
	ncclRingLLPCIeStepUs = 1.0
	ncclRingLLBusShare   = 0.25
	ncclRingSimpleBaseUs = 8.4
	ncclRingSimpleStepUs = 5.7
)

// pcieAllReduce reports whether all-reduce o runs as an NCCL ring over
// PCIe: one node of a device without NVLink.
func (r Roofline) pcieAllReduce(o *spec.Op) bool {
	return o.Name == spec.OpAllReduce && !o.CrossNode && !r.Device.NVLink
}

// pcieAllReduceUs is the GPU time, microseconds, of an NCCL ring
// all-reduce of bytes over o.Workers PCIe GPUs: the faster of NCCL's LL
// and Simple protocols as NCCL's tuning model prices them.
func (r Roofline) pcieAllReduceUs(o *spec.Op, bytes float64, c Curve) float64 {
	n := float64(max(o.Workers, 2))
	steps := 2 * (n - 1)
	busBps := r.Device.NVLinkGBps * 1e9 * c.MemEff
	moved := steps / n * bytes
	ll := ncclRingLLBaseUs + steps*ncclRingLLPCIeStepUs + moved/(busBps*ncclRingLLBusShare)*1e6
	simple := ncclRingSimpleBaseUs + steps*ncclRingSimpleStepUs + moved/busBps*1e6
	return min(ll, simple)
}
