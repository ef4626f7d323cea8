package roofline

import "github.com/ftk-dev/ftk/spec"

// Weights left in the L2 by a profiler that runs one block over and over.
//
// Frontier's linear-op profiler (NetX-lab/Frontier,
// frontier/profiling/linear_op/linear_op_impl.py GPTModel and
// linear_op_wrapper.py) builds ONE GPTBlock and, when it times kernels
// (record_function), runs that block 20 times in one forward pass, each
// time after the embedding; its CUDA-event mode runs the one-block model
// 3 + 20 times. So a GEMM of the profile reads the same weights it read one
// block earlier: when the block's weights fit in the L2 they are still
// there, and the GEMM streams them from the L2, not HBM. Serving is not
// like that (every layer has its own weights; a model's weights dwarf the
// L2), so the model prices it only when told (Roofline.RepeatedBlockBytes).
//
// What fits: half the L2. A100's L2 "is divided into two partitions ...
// Each L2 partition localizes and caches data for memory accesses from SMs
// in the GPCs directly connected to the partition" (NVIDIA A100 Tensor Core
// GPU Architecture whitepaper, 2020, "L2 cache"); Hopper's is split the same
// way (Chips and Cheese, "Nvidia's H100: Funny L2, and Tons of Bandwidth",
// 2023-07-02), so weights read by SMs of both halves are held in each and a
// block's weights stay only when they fit in one half. The H800 KERNEL_ONLY
// profiles bear it out: Phi-tiny-MoE's attention block (QKV plus output
// projection) at TP2 (21 MB on a GPU) and Qwen3-30B-A3B's at TP2 (18.9 MB)
// run their 8.4 MB output projection in 4.2 and 5.3 us where the same
// shape (4,096 x 1,024) in Llama-2-7B's 101 MB block at TP4 takes 5.5 us;
// at TP1 (42 and 37.7 MB, over the 25 MB half) they do not gain (Phi's
// 4,096 x 2,048 projection 8.4 us, Llama-2's same shape at TP2 8.1 us).
//
// The price of a warm GEMM (Curve.WarmFloorUs, L2Gain): its fixed cost,
// then its weights at the L2 rate and its K loop one after the other, not
// the larger of the two as from HBM. The rows ask for the sum: Phi's QKV
// projection (K 4,096) takes 7.8, 7.0 and 7.0 us at TP2, 4 and 8 (12.6,
// 6.3 and 4.2 MB), a K-loop time with the stream on top, and its output
// projection 4.2, 3.4 and 3.0 us (8.4, 4.2, 2.1 MB; K 1,024, 512, 256),
// under the cold floor plus K loop (3.4 us + 16, 8, 4 steps). The fixed
// cost is lower than the cold FloorUs (3.38 us), as the kernel's first
// loads are L2 hits; its size is fitted, not derived. Fitted on the
// calibration rows of the two H800 KERNEL_ONLY MoE profiles (the cold GEMM
// terms held): WarmFloorUs 2.58 us, L2Gain 2.5 (7.4 TB/s). The fit is a
// ridge (2.38 us with 2.0 to 2.78 us with 3.0 score alike); each profile
// alone picks a point on it (Phi 2.38 / 2.0, Qwen3 2.58 / 2.5), and the
// other's KERNEL_ONLY mean under that point is 4.3% (Qwen3) and 5.6% (Phi).

// l2Half is the share of the L2 a block's weights must fit in to stay.
const l2Half = 0.5

// weightsInL2 reports whether GEMM o re-reads its weights from the L2: the
// profiler repeats a block (RepeatedBlockBytes) that fits in l2Half of the
// device's L2.
func (r Roofline) weightsInL2(o *spec.Op) bool {
	return r.RepeatedBlockBytes > 0 && r.Device.L2MB > 0 &&
		r.RepeatedBlockBytes <= l2Half*r.Device.L2MB*1e6
}
