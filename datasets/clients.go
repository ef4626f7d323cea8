package datasets

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ftk-dev/ftk/spec"
)

// thinkStream is the PCG stream of think times.
const thinkStream = 0x7468696e6b73 // "thinks"

// Clients is a closed-loop source: a fixed number of clients, each with at
// most one request in flight, that send their next request only when the
// reply to the last one has come back. It is what `vllm bench serve
// --max-concurrency N` does (N clients; with a request rate, requests are
// drawn at that rate and each waits for a free client), extended to chat
// sessions: a client runs one session at a time, turn after turn, waiting
// a think time between a reply and the next turn.
//
// A simulator pulls requests with Next and reports each finished (or
// refused) request with Complete. Next returns false when no request can
// be sent until a reply arrives, and for good once n requests were sent; a
// request's ArrivalS is never before the completion that released it.
// Deterministic for a seed. Not safe for concurrent use.
type Clients struct {
	w       Workload
	n, sent int
	turns   int
	thinkS  float64
	think   *rand.Rand
	// lengths gives the lengths (and, with start arrivals, the start
	// times) of non-conversation requests; times gives the start times
	// of a conversation's sessions when starts are an arrival process.
	lengths, times *Source
	paced          bool // sessions start by an arrival process
	deck           *deck
	sessions       int

	clients []client
	ready   readyHeap    // clients with a known time for their next request
	free    []int        // clients waiting for a session start (paced), first free first
	owner   map[int]int  // request ID -> client, while in flight
	startS  float64      // next paced session start (NaN: none drawn)
	startRq spec.Request // its request (lengths) for non-conversation workloads
}

// client is one simulated user.
type client struct {
	session, group, turn int // turn: last sent, 0 before a session
	freeS                float64
}

// NewClients returns clients clients sending n requests of workload w in
// all. starts is how sessions start: ArrivalsNone starts a client's next
// session as soon as its last one ends (vLLM's benchmark with an infinite
// rate); an arrival process (poisson, gamma, stages, or replay of a trace's
// times) draws session start times, each start waiting for a free client.
// thinkS is the mean of the exponential think time between a reply and
// the session's next turn (0: none).
func NewClients(w Workload, starts Arrivals, clients, n int, thinkS float64, seed uint64) (*Clients, error) {
	switch {
	case clients < 1:
		return nil, fmt.Errorf("clients: want at least 1 client, got %d", clients)
	case !(thinkS >= 0) || math.IsInf(thinkS, 0):
		return nil, fmt.Errorf("clients: think time %g s must be finite and >= 0", thinkS)
	}
	c := &Clients{w: w, n: n, turns: 1, thinkS: thinkS, think: rand.New(rand.NewPCG(seed, thinkStream)),
		paced: starts.Kind != ArrivalsNone, startS: math.NaN()}
	var err error
	if w.Kind == KindConversation {
		conv := w.Conversation
		c.turns = conv.Turns
		c.deck = newDeck(&conv, rand.New(rand.NewPCG(seed, lengthStream)))
		if c.paced {
			fixed := Workload{Name: "fixed:1x1", Kind: KindFixed, PromptTokens: 1, OutputTokens: 1}
			c.times, err = NewSource(fixed, starts, n, seed)
		}
	} else {
		c.lengths, err = NewSource(w, starts, n, seed)
		if err == nil {
			c.n = c.lengths.Len()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("clients: %w", err)
	}
	if c.n < 1 {
		return nil, fmt.Errorf("clients: number of requests must be >= 1, got %d", n)
	}
	// Clients that have sent nothing are taken in their order (the free
	// list's, or the ready heap's at time zero) before any other, so the
	// n requests never reach past the first n clients: the others are
	// not made (--clients 1e9 asked 32 GB for them).
	clients = min(clients, c.n)
	c.clients, c.owner = make([]client, clients), make(map[int]int, clients)
	for i := range c.clients {
		if c.paced {
			c.free = append(c.free, i)
		} else {
			heap.Push(&c.ready, readyClient{0, i})
		}
	}
	return c, nil
}

// Err implements RequestStream: clients never fail part way.
func (c *Clients) Err() error { return nil }

// Len returns the number of requests the clients send in all.
func (c *Clients) Len() int { return c.n }

// Next returns the next request a client can send now that earlier replies
// have come back, or false when none can until another reply arrives (or
// all n were sent).
func (c *Clients) Next() (spec.Request, bool) {
	if c.sent >= c.n {
		return spec.Request{}, false
	}
	if c.ready.Len() > 0 {
		rc := heap.Pop(&c.ready).(readyClient)
		return c.send(rc.client, rc.atS, nil), true
	}
	if !c.paced || len(c.free) == 0 || !c.nextStart() {
		return spec.Request{}, false
	}
	i := c.free[0]
	c.free = c.free[1:]
	c.clients[i].turn = 0
	at := max(c.startS, c.clients[i].freeS)
	rq := c.startRq
	c.startS = math.NaN()
	return c.send(i, at, &rq), true
}

// nextStart draws the next paced session start, reporting false when the
// arrival process is spent.
func (c *Clients) nextStart() bool {
	if !math.IsNaN(c.startS) {
		return true
	}
	src := c.lengths
	if src == nil {
		src = c.times
	}
	r, ok := src.Next()
	if ok {
		c.startS, c.startRq = r.ArrivalS, r
	}
	return ok
}

// send makes client i's next request at atS: its session's next turn, or
// the first turn of a new session (with lengths from rq when the start
// drew them).
func (c *Clients) send(i int, atS float64, rq *spec.Request) spec.Request {
	cl := &c.clients[i]
	if cl.turn == 0 || cl.turn == c.turns {
		cl.session, cl.turn = c.sessions, 0
		c.sessions++
		if c.deck != nil {
			cl.group = c.deck.deal()
		}
	}
	cl.turn++
	var r spec.Request
	switch {
	case c.deck != nil:
		c.w.Conversation.fill(&r, cl.session, cl.turn, cl.group)
	case rq != nil:
		r = *rq
	default:
		r, _ = c.lengths.Next()
	}
	r.ID, r.ArrivalS = c.sent, atS
	c.sent++
	c.owner[r.ID] = i
	return r
}

// Complete tells the clients that request id finished (or was refused) at
// finishS: its client thinks, then sends its session's next turn, or
// starts a new session.
func (c *Clients) Complete(id int, finishS float64) {
	i, ok := c.owner[id]
	if !ok {
		return
	}
	delete(c.owner, id)
	cl := &c.clients[i]
	switch {
	case cl.turn < c.turns:
		at := finishS
		if c.thinkS > 0 {
			at += c.think.ExpFloat64() * c.thinkS
		}
		heap.Push(&c.ready, readyClient{at, i})
	case c.paced:
		cl.freeS = finishS
		c.free = append(c.free, i)
	default:
		heap.Push(&c.ready, readyClient{finishS, i})
	}
}

// readyClient is a client whose next request is due at atS.
type readyClient struct {
	atS    float64
	client int
}

// readyHeap orders ready clients by time, then client number.
type readyHeap []readyClient

func (h readyHeap) Len() int { return len(h) }
func (h readyHeap) Less(i, j int) bool {
	if h[i].atS != h[j].atS {
		return h[i].atS < h[j].atS
	}
	return h[i].client < h[j].client
}
func (h readyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *readyHeap) Push(x any)   { *h = append(*h, x.(readyClient)) }
func (h *readyHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
