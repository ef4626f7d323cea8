package simulate

// kvLink is one prefill instance's network link for KV-cache transfers.
// A transfer waits the link latency (connection set-up and the first
// bytes), then moves its bytes. Transfers in flight share the link's
// bandwidth equally (processor sharing, as concurrent RDMA reads or TCP
// flows on one NIC do), so two transfers started together each take twice
// as long as one alone.
type kvLink struct {
	id        int
	loop      *Loop
	bytesPerS float64
	latencyS  float64
	done      func(t int32, nowS float64)
	// remaining returns a pointer to the bytes transfer t has left.
	remaining func(t int32) *float64

	active   []int32
	finished []int32
	lastS    float64
	version  int32
}

// Link event kinds.
const (
	evLinkJoin = iota // a transfer's latency has passed: it starts moving bytes
	evLinkDone        // the earliest transfer in flight is due (arg: version)
)

// start begins transfer t now.
func (k *kvLink) start(t int32, nowS float64) {
	k.loop.Schedule(nowS+k.latencyS, PriorityEngine, k, evLinkJoin, int(t))
}

// Handle implements Actor.
func (k *kvLink) Handle(nowS float64, kind, arg int) {
	switch kind {
	case evLinkJoin:
		k.progress(nowS)
		k.active = append(k.active, int32(arg))
	case evLinkDone:
		if int32(arg) != k.version {
			return // superseded by a later join or finish
		}
		k.progress(nowS)
		kept := k.active[:0]
		k.finished = k.finished[:0]
		for _, t := range k.active {
			if *k.remaining(t) <= 1 { // within a byte: float rounding
				k.finished = append(k.finished, t)
			} else {
				kept = append(kept, t)
			}
		}
		k.active = kept
		for _, t := range k.finished {
			k.done(t, nowS)
		}
	}
	k.reschedule(nowS)
}

// progress drains the transfers in flight up to now.
func (k *kvLink) progress(nowS float64) {
	if n := len(k.active); n > 0 {
		moved := (nowS - k.lastS) * k.bytesPerS / float64(n)
		for _, t := range k.active {
			*k.remaining(t) -= moved
		}
	}
	k.lastS = nowS
}

// reschedule plans the next finish.
func (k *kvLink) reschedule(nowS float64) {
	k.version++
	if len(k.active) == 0 {
		return
	}
	least := *k.remaining(k.active[0])
	for _, t := range k.active[1:] {
		least = min(least, *k.remaining(t))
	}
	k.loop.Schedule(nowS+max(0, least)*float64(len(k.active))/k.bytesPerS, PriorityEngine, k, evLinkDone, int(k.version))
}
