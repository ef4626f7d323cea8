package main

import (
	"fmt"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/search"
	"github.com/urfave/cli/v3"
)

// Simulated capacity search for 'datasets make --load' without a pilot
// throughput: search.Capacity simulates the workload at Poisson rates and
// bisects for the highest rate whose waiting queue stays bounded
// (datasets.QueueBounded).

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
	var err error
	if cfg.Layout, err = layoutFrom(cmd); err != nil {
		return 0, "", err
	}
	n := cmd.Int("probe-requests")
	if n < 8 {
		return 0, "", usageError("--probe-requests must be at least 8, got %d", n)
	}
	if w.Kind == datasets.KindTrace && n > w.Rows() {
		n = w.Rows()
	}
	capRPS, probes, err := search.Capacity(cfg, w, n, seed, capacityStartRPS, capacityTol)
	if err != nil {
		return 0, "", fmt.Errorf("simulated capacity of %s on %s %s: %w", cfg.Model, cfg.Device, cfg.Layout, err)
	}
	how := fmt.Sprintf("capacity %.6g req/s: highest Poisson rate whose queue stays bounded, simulated (%s on %s, %s, %d requests per probe, %d probes, roofline cost model)",
		capRPS, cfg.Model, cfg.Device, cfg.Layout, n, probes)
	return capRPS, how, nil
}
