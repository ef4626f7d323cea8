package validate

import (
	"fmt"
	"maps"
	"sort"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/simulate"
	"github.com/ftk-dev/ftk/spec"
)

// Resimulate runs a simulated run's configuration again with calibration
// cal, on the requests the run replayed (its arrivals, prompt and output
// lengths), and returns the new run with the same identity. preds are the
// operator predictors of the run's bundle; nil for a roofline run.
func Resimulate(r *Run, cal cost.Calibration, preds cost.PredictorSet) (*Run, error) {
	if r.Sim == nil {
		return nil, fmt.Errorf("%s: not an ftk simulate output, so it cannot be simulated again", r)
	}
	if r.Sim.Bundle != "" && preds == nil {
		return nil, fmt.Errorf("%s: simulated with the bundle %s, which was not loaded", r, r.Sim.Bundle)
	}
	cfg := *r.Sim
	cal.FamilyScale = maps.Clone(cal.FamilyScale)
	cfg.Calibration = cal
	var rows collectRows
	sim, err := simulate.New(cfg, simulate.Options{Requests: &rows, Predictors: preds})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	if _, err := sim.Run(simulate.NewSliceSource(replayedRequests(r))); err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].RequestID < rows[j].RequestID })
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

// collectRows is a simulate.RequestSink keeping every row.
type collectRows []simulate.RequestMetrics

// WriteRequest implements simulate.RequestSink.
func (c *collectRows) WriteRequest(m *simulate.RequestMetrics) error {
	*c = append(*c, *m)
	return nil
}
