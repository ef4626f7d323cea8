package simulate

import (
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Engine roles.
const (
	RoleReplica = "replica" // co-located: prefill and decode
	RolePrefill = "prefill"
	RoleDecode  = "decode"
)

// transfer is one request's KV cache on its way from a prefill instance to
// a decode instance.
type transfer struct {
	req         spec.Request // OutputTokens: what the decode instance generates
	src, dst    int
	srcKV       heldKV
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

// newDisaggregation joins prefill and decode instances built to call it:
// a prefill instance's scheduler holds finished requests' KV blocks and
// hands them to prefilled; a decode instance calls finished for every
// completed request and admit after every batch.
func newDisaggregation(m *spec.Model, d *runresult.DisaggregationConfig, col *collector, router Router, loop *Loop, prefill, decode []*engine, obs transferObserver) *disaggregation {
	g := &disaggregation{col: col, prefill: prefill, decode: decode, router: router, observer: obs,
		decodeOutstanding: make([]int, len(decode)), pending: make([]deque, len(decode)), outputs: map[int]int{},
		// The whole model's KV cache of a token, every KV head once.
		bytesPerToken: float64(m.NumLayers) * float64(m.KVBytesPerTokenLayer(1))}
	for i := range prefill {
		k := &kvLink{id: i, loop: loop, bytesPerS: d.KVLinkGBps * 1e9, latencyS: d.KVLinkLatencyUs / 1e6, done: g.transferred,
			remaining: func(t int32) *float64 { return &g.transfers[t].remaining }}
		g.links = append(g.links, k)
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
		src: src, dst: dst, srcKV: g.prefill[src].sched.takeKV(r), preemptions: r.preemptions, readyS: nowS,
		bytes: bytes, remaining: bytes}
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
		g.col.kvWait.add((nowS - t.readyS) * 1e3)
		g.links[t.src].start(id, nowS)
	}
}

// transferred lands transfer id on its decode instance.
func (g *disaggregation) transferred(id int32, nowS float64) {
	t := &g.transfers[id]
	ms := (nowS - t.startS) * 1e3
	g.col.kvTransfer.add(ms)
	g.col.kvBytes += t.bytes
	if g.observer != nil {
		g.observer.observeTransfer(t, id, nowS)
	}
	p := g.prefill[t.src]
	p.sched.releaseKV(&t.srcKV)
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
