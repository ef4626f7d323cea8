package roofline

import (
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// GPUsPerNode is the GPUs one node holds (NVIDIA HGX/DGX: 8 on NVLink).
// An EP group larger than this crosses nodes over the NICs.
const GPUsPerNode = 8

// Published all-to-all figures used by the built-in model of the EP
// backends. DeepEP README (deepseek-ai/DeepEP, docs/legacy.md, 2025; H800
// with ~160 GB/s NVLink and CX7 InfiniBand 400 Gb/s, 4096 tokens a batch
// for the normal kernels and 128 for the low-latency ones, hidden 7168,
// top-8): normal (high-throughput) kernels reach 153 GB/s dispatch and
// 158 GB/s combine over NVLink within a node (EP8), 43-58 GB/s over RDMA
// across nodes (EP16-64); low-latency kernels take 77 us (98 GB/s) to
// dispatch and 114 us (127 GB/s) to combine at EP8, falling to 39 GB/s
// from EP128.
const (
	// deepEPNVLinkShare is DeepEP's normal-kernel NVLink bandwidth as a
	// share of the device's (153 of H800's 200 GB/s per direction).
	deepEPNVLinkShare = 153.0 / 200
	// deepEPRDMAShare is its RDMA bandwidth as a share of the NIC's: the
	// middle of 43-58 GB/s over a 50 GB/s CX7 (adaptive routing and NVLink
	// forwarding let it exceed the NIC now and then).
	deepEPRDMAShare = 50.0 / 50
	// deepEPHostSyncUs is the host time the high-throughput dispatch spends
	// waiting for the receive counts (notify_dispatch copies them to the
	// CPU, which sizes the receive buffers): a guess of one device-to-host
	// round trip.
	deepEPHostSyncUs = 20
	// pplxLatencyUs is the fixed cost of a pplx-kernels dispatch or
	// combine (two kernels: send, then receive with a device-side
	// barrier): a guess, of the order of DeepEP's low-latency kernels at
	// small sizes.
	pplxLatencyUs = 30
	// allToAllShare is the link share a routed all-to-all (pplx) reaches:
	// a guess between NCCL's bus efficiency and DeepEP's.
	allToAllShare = 0.7
)

// epCallUs is the fixed cost of each further collective call of an
// exchange (the naive dispatch broadcasts once per DP rank): the one-hop
// latency of NCCL over NVLink, about 6 us (the base latency ftk's built-in
// collective model used before its curves were fitted).
const epCallUs = 6.0

// deepEPLowLatencyGBps is DeepEP's low-latency bandwidth by EP size
// (dispatch, combine), from the README table above; sizes between rows
// take the smaller row.
var deepEPLowLatencyGBps = []struct {
	ep                int
	dispatch, combine float64
}{
	{8, 98, 127}, {16, 63, 74}, {32, 48, 53}, {64, 43, 46}, {128, 39, 39},
}

// epExchangeUs is the transfer time of one EP dispatch or combine moving
// bytes (the op's size_bytes feature: what one rank receives, EPExchange)
// with the op's backend, on top of the collective class's kernel floor
// (Curve c; its MemEff is the share of the link NCCL reaches):
//
//   - naive: dispatch is one broadcast per DP rank of its share, so the
//     latency counts DP times and every rank receives the whole gathered
//     buffer; combine all-reduces the gathered buffer (ring: 2(n-1)/n of
//     it, two latencies).
//   - allgather_reducescatter: one all-gather (dispatch) and one
//     reduce-scatter (combine) over the DP ranks, (d-1)/d of the buffer.
//   - pplx: a routed all-to-all of the copies, (n-1)/n of them remote,
//     at allToAllShare of the link plus pplxLatencyUs.
//   - deepep_high_throughput: DeepEP's normal kernels, plus the host sync
//     of dispatch.
//   - deepep_low_latency: DeepEP's low-latency kernels at their published
//     bandwidth for the EP size.
//
// Within a node the link is NVLink; an EP group of more than GPUsPerNode
// GPUs crosses nodes and (n-node)/n of its traffic goes over the NICs,
// which then set the time.
func (r Roofline) epExchangeUs(o *spec.Op, bytes float64, c Curve) float64 {
	d := r.Device
	n := float64(max(o.Workers, 2))
	dp := float64(max(o.DPRanks, 1))
	cross := o.CrossNode || o.Workers > GPUsPerNode
	eff := c.MemEff
	if eff <= 0 {
		eff = 0.8
	}
	link := d.NVLinkGBps * 1e9 * eff
	if cross {
		link = d.NetworkGBps * 1e9 * eff
	}
	combine := o.Name == spec.OpEPCombine
	switch o.Backend {
	case spec.All2AllAllgatherRS:
		return (dp - 1) / dp * bytes / link * 1e6
	case spec.All2AllPPLX:
		return pplxLatencyUs + (n-1)/n*bytes/(link/eff*allToAllShare)*1e6
	case spec.All2AllDeepEPHT:
		bw := d.NVLinkGBps * 1e9 * deepEPNVLinkShare
		if cross {
			bw = d.NetworkGBps * 1e9 * deepEPRDMAShare
		}
		us := (n - 1) / n * bytes / bw * 1e6
		if !combine {
			us += deepEPHostSyncUs
		}
		return us
	case spec.All2AllDeepEPLL:
		row := deepEPLowLatencyGBps[0]
		for _, x := range deepEPLowLatencyGBps {
			if x.ep <= o.Workers {
				row = x
			}
		}
		gbps := row.dispatch
		if combine {
			gbps = row.combine
		}
		return bytes / (gbps * 1e9) * 1e6
	}
	// naive
	if combine {
		return 2 * (n - 1) / n * bytes / link * 1e6
	}
	return (dp-1)*epCallUs + math.Max(0, bytes)/link*1e6
}
