package simulate

// vLLM's internal data-parallel load balancing (vllm/v1/engine/core_client.py,
// DPLBAsyncMPClient.get_core_engine_for_request, and
// vllm/v1/engine/coordinator.py, v0.10.2): the front end sends a request
// to the DP rank with the lowest score waiting x 4 + running, scanning from
// its client index (0 with one API server) so that the first of equal
// ranks wins; the counts are the coordinator's snapshot of every rank's
// scheduler, published every 100 ms while they change
// (stats_update_interval_ms), and between snapshots the front end adds
// each request it sends to the chosen rank's waiting count.
const (
	dpWaitingWeight    = 4
	dpStatsIntervalS   = 0.1
	dpLocalWaitingStep = 1 // client_count with one front end
)

// dpBalancer picks the DP rank of each arriving request as vLLM's front
// end does, from snapshots of the ranks' queues.
type dpBalancer struct {
	ranks  []*engine
	counts [][2]int // waiting, running per rank, as last published
	nextS  float64  // when the next snapshot is published
}

func newDPBalancer(ranks []*engine) *dpBalancer {
	return &dpBalancer{ranks: ranks, counts: make([][2]int, len(ranks))}
}

// pick returns the rank for a request arriving at nowS.
func (b *dpBalancer) pick(nowS float64) int {
	if nowS >= b.nextS {
		for i, e := range b.ranks {
			s := e.sched
			b.counts[i] = [2]int{s.waiting.len() + s.ready.len(), len(s.running)}
		}
		b.nextS = nowS + dpStatsIntervalS
	}
	best, bestScore := 0, -1
	for i, c := range b.counts {
		if score := c[0]*dpWaitingWeight + c[1]; bestScore < 0 || score < bestScore {
			best, bestScore = i, score
		}
	}
	b.counts[best][0] += dpLocalWaitingStep
	return best
}
