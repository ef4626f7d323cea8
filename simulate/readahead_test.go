package simulate

import (
	"testing"

	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// countingSource counts the requests read from src.
type countingSource struct {
	src  Source
	read int
}

func (c *countingSource) Next() (spec.Request, bool) {
	r, ok := c.src.Next()
	if ok {
		c.read++
	}
	return r, ok
}

// readAheadSink records, at each finished request, how many requests
// were read from the source and not yet finished.
type readAheadSink struct {
	src              *countingSource
	finished, peakIn int
}

func (s *readAheadSink) WriteRequest(*runresult.RequestMetrics) error {
	s.peakIn = max(s.peakIn, s.src.read-s.finished)
	s.finished++
	return nil
}

// TestOfflineBatchReadsAsTheQueueDrains: an offline batch (every request
// at t=0) holds what is in flight, not the request count: the source is read only as the
// engine's queue drains, so at no finish are more than the hold
// (holdWaitingMin) and the running requests read and unfinished. Every
// request was read at t=0 before (30,000 of 30,000 in flight), so memory
// grew with the run: 6.9 GB at 10M requests.
func TestOfflineBatchReadsAsTheQueueDrains(t *testing.T) {
	cfg := testConfig()
	const n = 30_000
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:64x8", NumRequests: n, Seed: 1}
	src, _, err := openSource(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	cs := &countingSource{src: src}
	sink := &readAheadSink{src: cs}
	sim, err := mustResolve(t, cfg).New(Options{Requests: sink})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Run(cs); err != nil {
		t.Fatal(err)
	}
	bound := holdWaitingMin + 2*cfg.Engine.MaxNumSeqs
	if sink.finished != n || sink.peakIn > bound {
		t.Errorf("%d of %d finished; up to %d requests read and unfinished, want at most %d", sink.finished, n, sink.peakIn, bound)
	}
}
