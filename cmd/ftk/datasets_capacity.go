package main

import (
	"fmt"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/simulate"
	"github.com/urfave/cli/v3"
)

// Simulated capacity search for 'datasets make --load' without a pilot
// throughput: package simulate runs the workload at Poisson rates, and
// datasets.FindCapacity bisects for the highest rate whose waiting queue
// stays bounded (datasets.QueueBounded).

// capacityFlags name the simulated system.
func capacityFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "model", Usage: "--load without --pilot-throughput: simulate this model (catalog name or config.json) to find the capacity"},
		&cli.StringFlag{Name: "device", Value: runresult.DefaultConfig().Device, Usage: "--load: device of the simulated capacity search"},
		&cli.IntFlag{Name: "probe-requests", Value: 2000, Usage: "--load: requests per simulated probe of the capacity search"},
	}, layoutFlags()...)
}

// Capacity search settings: the first rate tried and the relative
// tolerance of the result.
const (
	capacityStartRPS = 1
	capacityTol      = 0.02
)

// simulatedCapacity finds the capacity of the simulated system for w.
func simulatedCapacity(cmd *cli.Command, w datasets.Workload, seed uint64) (float64, string, error) {
	cfg := runresult.DefaultConfig()
	cfg.Model = cmd.String("model")
	cfg.Device = cmd.String("device")
	cfg.Layout = layoutFrom(cmd)
	n := cmd.Int("probe-requests")
	if n < 8 {
		return 0, "", usageError("--probe-requests must be at least 8, got %d", n)
	}
	if w.Kind == datasets.KindTrace && n > len(w.Requests()) {
		n = len(w.Requests())
	}
	p := &capacityProbe{cfg: cfg, w: w, n: n, seed: seed}
	capRPS, probes, err := datasets.FindCapacity(p, capacityStartRPS, capacityTol)
	if err != nil {
		return 0, "", fmt.Errorf("simulated capacity of %s on %s %s: %w", cfg.Model, cfg.Device, cfg.Layout, err)
	}
	how := fmt.Sprintf("capacity %.6g req/s: highest Poisson rate whose queue stays bounded, simulated (%s on %s, %s, %d requests per probe, %d probes, roofline cost model)",
		capRPS, cfg.Model, cfg.Device, cfg.Layout, n, probes)
	return capRPS, how, nil
}

// capacityProbe is a datasets.QueueProbe that simulates the workload at a rate.
type capacityProbe struct {
	cfg  runresult.Config
	w    datasets.Workload
	n    int
	seed uint64
}

// Bounded runs n requests at rateRPS and applies datasets.QueueBounded to
// the number of earlier requests still waiting for their first token at
// each arrival.
func (p *capacityProbe) Bounded(rateRPS float64) (bool, error) {
	src, err := datasets.NewSource(p.w, datasets.Arrivals{Kind: datasets.ArrivalsPoisson, RateRPS: rateRPS}, p.n, p.seed)
	if err != nil {
		return false, err
	}
	sink := &capacitySink{arrivalS: make([]float64, src.Len()), firstS: make([]float64, src.Len())}
	sim, err := simulate.New(p.cfg, simulate.Options{Requests: sink})
	if err != nil {
		return false, err
	}
	if _, err := sim.Run(src); err != nil {
		return false, err
	}
	waiting, err := datasets.WaitingAtArrivals(sink.arrivalS, sink.firstS)
	if err != nil {
		return false, err
	}
	return datasets.QueueBounded(waiting), nil
}

// capacitySink records each request's arrival and first-token times by
// request ID.
type capacitySink struct{ arrivalS, firstS []float64 }

func (s *capacitySink) WriteRequest(m *runresult.RequestMetrics) error {
	if m.RequestID < 0 || m.RequestID >= len(s.arrivalS) {
		return fmt.Errorf("capacity probe: request id %d out of range", m.RequestID)
	}
	s.arrivalS[m.RequestID], s.firstS[m.RequestID] = m.ArrivalS, m.FirstTokenS
	return nil
}
