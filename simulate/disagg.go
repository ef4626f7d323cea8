package simulate

import (
	"fmt"
	"math"

	"github.com/ftk-dev/ftk/spec"
)

// Serving modes (Config.Mode).
const (
	ModeColocated     = "colocated"
	ModeDisaggregated = "disaggregated"
)

// Engine roles.
const (
	RoleReplica = "replica" // co-located: prefill and decode
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// Defaults of the KV link.
const (
	// defaultKVLinkGBpsPerGPU is one 400 Gb/s RDMA NIC per GPU (50 GB/s),
	// as DGX H100 / HGX systems have, the path NIXL and similar KV
	// connectors use between nodes.
	defaultKVLinkGBpsPerGPU = 50
	// defaultKVLinkLatencyUs is the set-up of one transfer: the decode
	// instance learning of the finished prefill and issuing its reads.
	defaultKVLinkLatencyUs = 50
)

// DisaggregationConfig lays out a disaggregated deployment: prefill
// instances run prompts, then hand each request's KV cache over a link to
// a decode instance, which generates its output tokens (DESIGN section 3).
type DisaggregationConfig struct {
	PrefillInstances int `json:"prefill_instances" yaml:"prefill_instances"`
	DecodeInstances  int `json:"decode_instances" yaml:"decode_instances"`
	// PrefillLayout and DecodeLayout are each instance's parallel layout
	// (DP must be 1: instances replace data parallelism); zero means
	// Config.Layout.
	PrefillLayout spec.Layout `json:"prefill_layout" yaml:"prefill_layout"`
	DecodeLayout  spec.Layout `json:"decode_layout" yaml:"decode_layout"`
	// KVLinkGBps is the bandwidth of each prefill instance's KV link in
	// GB/s (1e9 bytes/s); 0 means 50 GB/s per GPU of a prefill instance.
	KVLinkGBps float64 `json:"kv_link_gbps" yaml:"kv_link_gbps"`
	// KVLinkLatencyUs is the fixed cost of one transfer, microseconds (0:
	// 50 us; negative is invalid).
	KVLinkLatencyUs float64 `json:"kv_link_latency_us" yaml:"kv_link_latency_us"`
}

func (d *DisaggregationConfig) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("simulate config: disaggregation: "+format, a...)
	}
	switch {
	case d.PrefillInstances < 0 || d.DecodeInstances < 0:
		return bad("prefill_instances (%d) and decode_instances (%d) must not be negative", d.PrefillInstances, d.DecodeInstances)
	case d.KVLinkGBps < 0 || math.IsNaN(d.KVLinkGBps) || math.IsInf(d.KVLinkGBps, 0):
		return bad("kv_link_gbps must be a positive bandwidth, got %g", d.KVLinkGBps)
	case d.KVLinkLatencyUs < 0 || math.IsNaN(d.KVLinkLatencyUs) || math.IsInf(d.KVLinkLatencyUs, 0):
		return bad("kv_link_latency_us must not be negative, got %g", d.KVLinkLatencyUs)
	}
	return nil
}

// resolve fills in defaults from the run's layout.
func (d *DisaggregationConfig) resolve(l spec.Layout) {
	if d.PrefillInstances == 0 {
		d.PrefillInstances = 1
	}
	if d.DecodeInstances == 0 {
		d.DecodeInstances = 1
	}
	if d.PrefillLayout == (spec.Layout{}) {
		d.PrefillLayout = l
	}
	if d.DecodeLayout == (spec.Layout{}) {
		d.DecodeLayout = l
	}
	d.PrefillLayout, d.DecodeLayout = d.PrefillLayout.Normalize(), d.DecodeLayout.Normalize()
	if d.KVLinkGBps == 0 {
		d.KVLinkGBps = defaultKVLinkGBpsPerGPU * float64(d.PrefillLayout.TP*d.PrefillLayout.PP)
	}
	if d.KVLinkLatencyUs == 0 {
		d.KVLinkLatencyUs = defaultKVLinkLatencyUs
	}
}

// transfer is one request's KV cache on its way from a prefill instance to
// a decode instance.
type transfer struct {
	req         spec.Request // OutputTokens: what the decode instance generates
	src, dst    int
	srcBlocks   int
	dstBlocks   int
	preemptions int32
	readyS      float64 // prefill finished
	startS      float64 // blocks reserved on the decode instance, transfer started
	bytes       float64
	remaining   float64
}

// disaggregation moves requests from prefill to decode instances: when a
// prefill instance finishes a prompt it keeps the request's KV blocks; a
// decode instance (picked by the router) queues the request until it can
// reserve blocks for the prompt (first come, first served), then the
// request's KV cache crosses the prefill instance's link; on arrival the
// prefill instance frees its blocks and the decode instance admits the
// request, whose first step recomputes the last prompt token and samples
// the first output token. TTFT thus covers prefill, the wait for blocks,
// the transfer and that first decode step.
type disaggregation struct {
	col               *collector
	prefill, decode   []*engine
	links             []*kvLink
	router            Router
	decodeOutstanding []int
	pending           []deque // per decode instance: transfers waiting for blocks
	transfers         []transfer
	free              []int32
	outputs           map[int]int // request ID -> output tokens asked, while prefilling
	bytesPerToken     float64
	observer          transferObserver
}

// transferObserver sees every KV transfer as it lands.
type transferObserver interface {
	observeTransfer(t *transfer, id int32, endS float64)
}

func newDisaggregation(m *spec.Model, d *DisaggregationConfig, col *collector, router Router, loop *Loop, prefill, decode []*engine) *disaggregation {
	g := &disaggregation{col: col, prefill: prefill, decode: decode, router: router,
		decodeOutstanding: make([]int, len(decode)), pending: make([]deque, len(decode)), outputs: map[int]int{},
		// The whole model's KV cache of a token, every KV head once.
		bytesPerToken: float64(m.NumLayers) * float64(m.KVBytesPerTokenLayer(1))}
	for i := range prefill {
		k := &kvLink{id: i, loop: loop, bytesPerS: d.KVLinkGBps * 1e9, latencyS: d.KVLinkLatencyUs / 1e6, done: g.transferred,
			remaining: func(t int32) *float64 { return &g.transfers[t].remaining }}
		g.links = append(g.links, k)
		src := i
		prefill[i].sched.holdKV = true
		prefill[i].sched.done = func(r *reqState, nowS float64) { g.prefilled(src, r, nowS) }
	}
	for j := range decode {
		dst := j
		decode[j].afterBatch = func(nowS float64) { g.admit(dst, nowS) }
	}
	return g
}

// arrive sends a request to prefill instance i: it runs the prompt and
// samples one token (discarded, as vLLM's disaggregated proxy does).
func (g *disaggregation) arrive(i int, nowS float64, q *spec.Request) {
	g.outputs[q.ID] = q.OutputTokens
	p := *q
	p.OutputTokens = 1
	g.prefill[i].Admit(nowS, &p)
}

// prefilled takes a request that finished its prompt on instance src.
func (g *disaggregation) prefilled(src int, r *reqState, nowS float64) {
	var id int32
	if n := len(g.free); n > 0 {
		id, g.free = g.free[n-1], g.free[:n-1]
	} else {
		id = int32(len(g.transfers))
		g.transfers = append(g.transfers, transfer{})
	}
	out := g.outputs[r.id]
	delete(g.outputs, r.id)
	dst := g.router.Pick(g.decodeOutstanding)
	g.decodeOutstanding[dst]++
	bytes := float64(r.prompt) * g.bytesPerToken
	g.transfers[id] = transfer{
		req: spec.Request{ID: r.id, ArrivalS: r.arrivalS, PromptTokens: int(r.prompt), OutputTokens: out},
		src: src, dst: dst, srcBlocks: int(r.blocks), preemptions: r.preemptions, readyS: nowS,
		bytes: bytes, remaining: bytes}
	r.blocks = 0 // the transfer holds them now
	g.pending[dst].pushBack(id)
	g.admit(dst, nowS)
}

// admit starts the transfers decode instance dst has blocks for, in order.
func (g *disaggregation) admit(dst int, nowS float64) {
	q := &g.pending[dst]
	s := g.decode[dst].sched
	for q.len() > 0 {
		t := &g.transfers[q.front()]
		need := s.blocksFor(t.req.PromptTokens)
		if !s.reserve(need) {
			return
		}
		id := q.popFront()
		t.dstBlocks, t.startS = need, nowS
		g.col.kvWait = append(g.col.kvWait, (nowS-t.readyS)*1e3)
		g.links[t.src].start(id, nowS)
	}
}

// transferred lands transfer id on its decode instance.
func (g *disaggregation) transferred(id int32, nowS float64) {
	t := &g.transfers[id]
	ms := (nowS - t.startS) * 1e3
	g.col.kvTransfer = append(g.col.kvTransfer, ms)
	g.col.kvBytes += t.bytes
	if g.observer != nil {
		g.observer.observeTransfer(t, id, nowS)
	}
	p := g.prefill[t.src]
	p.sched.releaseBlocks(t.srcBlocks)
	p.kick(nowS)
	d := g.decode[t.dst]
	d.sched.admitTransferred(&t.req, t.dstBlocks, t.preemptions, ms)
	d.kick(nowS)
	g.free = append(g.free, id)
}

// finished is the decode instances' done callback.
func (g *disaggregation) finished(dst int, r *reqState, nowS float64) {
	g.col.finish(r, nowS)
	g.decodeOutstanding[dst]--
}

// inFlight is the requests between prefill and decode admission.
func (g *disaggregation) inFlight() int { return len(g.outputs) + len(g.transfers) - len(g.free) }
