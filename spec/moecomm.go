package spec

import "fmt"

// Expert-parallel communication: which collectives an MoE layer runs under
// a layout, and what each of vLLM's all-to-all backends moves.
//
// What vLLM does (vllm/model_executor/layers/fused_moe/config.py,
// FusedMoEParallelConfig; v0.9.0 to v0.11 and main as of 2025-11):
//
//   - use_all2all_kernels is `dp_size > 1 and use_ep` (v0.9-v0.11: the
//     property right after the dataclass fields; main adds pcp_size > 1 and
//     sequence parallelism to the condition). With data parallelism the
//     FusedMoE layer calls the EP group's dispatch before the experts and
//     combine after them (layer.py forward_impl, `if self.dp_size > 1`),
//     whatever the backend.
//   - At DP=1 there is no dispatch: TP x EP ranks each hold every token
//     (the attention output is all-reduced over TP), run their local
//     experts and the layer's TP all-reduce sums the outputs. An earlier
//     ftk charged dispatch and combine on top of that all-reduce at
//     TP8/EP8/DP1; vLLM does no such thing.
//   - The backend is VLLM_ALL2ALL_BACKEND in v0.9-v0.10 and
//     --all2all-backend (ParallelConfig.all2all_backend) from v0.11; the
//     default is naive up to v0.10 and allgather_reducescatter from v0.11.
//   - vllm/distributed/device_communicators/all2all.py: NaiveAll2AllManager
//     broadcasts each DP rank's tokens to every rank (naive_multicast: one
//     broadcast per DP rank over the EP group) and combines with an
//     all-reduce of the whole gathered buffer, each rank keeping its slice;
//     AgRsAll2AllManager all-gathers (all_gatherv) over the DP group and
//     reduce-scatters (reduce_scatterv) back; PPLX and DeepEP move each
//     token only to the ranks holding its experts (modular kernels'
//     prepare/finalize).
//
// MoEExchanges and the backends below are that, in one place.

// MoEExchanges reports whether an MoE layer of layout l dispatches tokens
// to the EP group and combines them back (vLLM: the layer's dp_size > 1):
// true with data parallelism, false at DP=1 where the TP all-reduce sums
// the local experts' outputs.
func MoEExchanges(l Layout) bool { return l.Normalize().DP > 1 }

// UsesAll2AllKernels is vLLM's FusedMoEParallelConfig.use_all2all_kernels:
// data parallelism with expert parallelism. Only then can an all-to-all
// backend (pplx, DeepEP) run.
func UsesAll2AllKernels(l Layout) bool { l = l.Normalize(); return l.DP > 1 && l.EP > 1 }

// EP communication backends, with vLLM's names.
const (
	All2AllNaive       = "naive"
	All2AllAllgatherRS = "allgather_reducescatter"
	All2AllPPLX        = "pplx"
	All2AllDeepEPHT    = "deepep_high_throughput"
	All2AllDeepEPLL    = "deepep_low_latency"
)

// All2AllBackends lists the backends.
func All2AllBackends() []string {
	return []string{All2AllNaive, All2AllAllgatherRS, All2AllPPLX, All2AllDeepEPHT, All2AllDeepEPLL}
}

// RoutesCopies reports whether backend b moves routed token copies to the
// ranks of their experts (an all-to-all whose size follows the routing)
// rather than gathering every token to every rank.
func RoutesCopies(b string) bool {
	switch b {
	case All2AllPPLX, All2AllDeepEPHT, All2AllDeepEPLL:
		return true
	}
	return false
}

// CheckAll2AllBackend checks backend b against layout l.
func CheckAll2AllBackend(b string, l Layout) error {
	switch b {
	case All2AllNaive, All2AllAllgatherRS:
		return nil
	case All2AllPPLX, All2AllDeepEPHT, All2AllDeepEPLL:
		if MoEExchanges(l) && !UsesAll2AllKernels(l) {
			return fmt.Errorf("all2all backend %s needs expert parallelism with DP > 1 (vLLM's use_all2all_kernels); layout %s has EP=1: use %s or %s", b, l, All2AllNaive, All2AllAllgatherRS)
		}
		return nil
	}
	return fmt.Errorf("unknown all2all backend %q: use one of %v", b, All2AllBackends())
}

// EPExchange is one MoE layer's token exchange on one EP rank for one
// lockstep step: what dispatch and combine move.
type EPExchange struct {
	Backend string
	// DP is the number of data-parallel ranks; Ranks the EP group (TP x DP).
	DP, Ranks int
	// GroupTokens is the tokens of every DP rank together, as run (padded).
	GroupTokens int
	// RecvCopies is the routed token copies the most loaded EP rank
	// receives (all-to-all backends).
	RecvCopies int
	// Hidden is the model width, Experts the router's output width.
	Hidden, Experts int
}

// DispatchBytes is the size_bytes feature of ep_dispatch: the bytes one
// rank receives. Naive and allgather_reducescatter gather every DP rank's
// hidden states and router outputs (BF16), the all-to-all backends the
// routed copies the most loaded rank receives (BF16 hidden states; the
// FP8-quantised dispatch of FP8 models is not modelled).
func (x EPExchange) DispatchBytes() float64 {
	if RoutesCopies(x.Backend) {
		return float64(x.RecvCopies) * float64(x.Hidden) * 2
	}
	return float64(x.GroupTokens) * float64(x.Hidden+x.Experts) * 2
}

// CombineBytes is the size_bytes feature of ep_combine: the gathered
// outputs reduced back (naive: all-reduced, allgather_reducescatter:
// reduce-scattered), or the routed copies sent back.
func (x EPExchange) CombineBytes() float64 {
	if RoutesCopies(x.Backend) {
		return float64(x.RecvCopies) * float64(x.Hidden) * 2
	}
	return float64(x.GroupTokens) * float64(x.Hidden) * 2
}
