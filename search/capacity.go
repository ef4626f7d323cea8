package search

import (
	"errors"
	"fmt"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
)

// Capacity finds the capacity of the simulated deployment cfg for workload
// w: the highest Poisson arrival rate whose waiting queue stays bounded
// (datasets.FindCapacity from startRPS to relative tolerance tol, with
// datasets.QueueBounded as the definition), each probe a run of n requests
// drawn with seed. It returns the capacity and the number of probes.
// 'ftk datasets make --load --model' uses it.
func Capacity(cfg runresult.Config, w datasets.Workload, n int, seed uint64, startRPS, tol float64) (float64, int, error) {
	return datasets.FindCapacity(NewCapacityProbe(cfg, w, n, seed), startRPS, tol)
}

// NewCapacityProbe returns the probe Capacity runs: a simulation of cfg on
// n requests of w (seed) at a Poisson rate.
func NewCapacityProbe(cfg runresult.Config, w datasets.Workload, n int, seed uint64) datasets.QueueProbe {
	return &capacityProbe{cfg: cfg, w: w, n: n, seed: seed}
}

// capacityProbe is a datasets.QueueProbe that simulates the workload at a
// rate.
type capacityProbe struct {
	cfg  runresult.Config
	w    datasets.Workload
	n    int
	seed uint64
	// r is cfg resolved by the first probe.
	r *simulate.Resolved
}

// Bounded runs n requests at rateRPS and applies datasets.QueueBounded to
// the number of earlier requests still waiting for their first token at
// each arrival.
func (p *capacityProbe) Bounded(rateRPS float64) (bool, error) {
	src, err := datasets.NewSource(p.w, datasets.Arrivals{Kind: datasets.ArrivalsPoisson, RateRPS: rateRPS}, p.n, p.seed)
	if err != nil {
		return false, err
	}
	if p.r == nil {
		if p.r, err = simulate.Resolve(p.cfg, simulate.Options{}); err != nil {
			return false, err
		}
	}
	// A run whose queue surely grows stops there (datasets.QueueWatch):
	// the verdict is the same as at its end.
	arrivals, err := datasets.NewSource(p.w, datasets.Arrivals{Kind: datasets.ArrivalsPoisson, RateRPS: rateRPS}, p.n, p.seed)
	if err != nil {
		return false, err
	}
	arrivalS := make([]float64, 0, arrivals.Len())
	for r, ok := arrivals.Next(); ok; r, ok = arrivals.Next() {
		arrivalS = append(arrivalS, r.ArrivalS)
	}
	watch, err := datasets.NewQueueWatch(arrivalS)
	if err != nil {
		return false, err
	}
	sink := &capacitySink{arrivalS: make([]float64, src.Len()), firstS: make([]float64, src.Len()), watch: watch}
	opts := simulate.Options{Requests: sink, FirstToken: func(id int, nowS float64) error {
		if watch.Start(id, nowS) {
			return errQueueGrows
		}
		return nil
	}}
	sim, err := p.r.New(opts)
	if err != nil {
		return false, err
	}
	if _, err := sim.Run(src); errors.Is(err, errQueueGrows) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	waiting, err := datasets.WaitingAtArrivals(sink.arrivalS, sink.firstS)
	if err != nil {
		return false, err
	}
	return datasets.QueueBounded(waiting), nil
}

// capacitySink records each request's arrival and first-token times by
// request ID, and tells watch of requests refused on arrival.
type capacitySink struct {
	arrivalS, firstS []float64
	watch            *datasets.QueueWatch
}

func (s *capacitySink) WriteRequest(m *runresult.RequestMetrics) error {
	if m.RequestID < 0 || m.RequestID >= len(s.arrivalS) {
		return fmt.Errorf("capacity probe: request id %d out of range", m.RequestID)
	}
	s.arrivalS[m.RequestID], s.firstS[m.RequestID] = m.ArrivalS, m.FirstTokenS
	if m.Status == runresult.StatusRejected {
		s.watch.Refused()
	}
	return nil
}
