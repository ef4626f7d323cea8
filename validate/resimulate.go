package validate

import (
	"fmt"
	"maps"
	"sort"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// SimulateFunc runs a simulation configuration on requests (in arrival
// order) with operator predictors preds (nil for a roofline run) and
// returns each request's row, by request ID. The command line passes
// simulate.Replay; validate itself does not import the simulator.
type SimulateFunc func(cfg runresult.Config, preds cost.PredictorSet, reqs []spec.Request) ([]runresult.RequestMetrics, error)

// Resimulate runs a simulated run's configuration again with calibration
// cal, on the requests the run replayed (its arrivals, prompt and output
// lengths), and returns the new run with the same identity. preds are the
// operator predictors of the run's bundle; nil for a roofline run.
func Resimulate(r *Run, cal runresult.Calibration, preds cost.PredictorSet, sim SimulateFunc) (*Run, error) {
	if r.Sim == nil {
		return nil, fmt.Errorf("%s: not an ftk simulate output, so it cannot be simulated again", r)
	}
	if r.Sim.Bundle != "" && preds == nil {
		return nil, fmt.Errorf("%s: simulated with the bundle %s, which was not loaded", r, r.Sim.Bundle)
	}
	if sim == nil {
		return nil, fmt.Errorf("%s: no simulator to run it again with (CalibrateOptions.Simulate)", r)
	}
	cfg := *r.Sim
	cal.FamilyScale = maps.Clone(cal.FamilyScale)
	cfg.Calibration = cal
	rows, err := sim(cfg, preds, replayedRequests(r))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	out := runFromMetrics(rows)
	out.ID, out.Side, out.Source, out.Model, out.Sim = r.ID, r.Side, r.Source, r.Model, &cfg
	return out, nil
}

// replayedRequests returns the requests of a run in arrival order.
func replayedRequests(r *Run) []spec.Request {
	reqs := make([]spec.Request, len(r.Requests))
	for i, q := range r.Requests {
		reqs[i] = spec.Request{ID: q.ID, ArrivalS: q.ArrivalS, PromptTokens: q.PromptTokens, OutputTokens: q.OutputTokens}
	}
	sort.SliceStable(reqs, func(i, j int) bool {
		if reqs[i].ArrivalS != reqs[j].ArrivalS {
			return reqs[i].ArrivalS < reqs[j].ArrivalS
		}
		return reqs[i].ID < reqs[j].ID
	})
	return reqs
}
