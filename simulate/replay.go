package simulate

import (
	"sort"

	"github.com/ftk-dev/ftk/cost"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/spec"
)

// Replay runs cfg on reqs (in arrival order) with the operator predictors
// preds (nil: cfg's bundle, or the roofline) and returns every request's
// row, by request ID. It writes no files: calibration (package validate)
// re-simulates runs through it.
func Replay(cfg runresult.Config, preds cost.PredictorSet, reqs []spec.Request) ([]runresult.RequestMetrics, error) {
	var rows keepRows
	sim, err := New(cfg, Options{Requests: &rows, Predictors: preds})
	if err != nil {
		return nil, err
	}
	if _, err := sim.Run(NewSliceSource(reqs)); err != nil {
		return nil, err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].RequestID < rows[j].RequestID })
	return rows, nil
}

// keepRows is a RequestSink keeping every row.
type keepRows []runresult.RequestMetrics

// WriteRequest implements RequestSink.
func (c *keepRows) WriteRequest(m *runresult.RequestMetrics) error {
	*c = append(*c, *m)
	return nil
}
