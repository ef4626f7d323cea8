package validate

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ftk-dev/ftk/runresult"
)

// isSimulateDir reports whether dir is an ftk simulate output directory.
func isSimulateDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, runresult.SummaryFile))
	return err == nil
}

// ReadSimulated reads an ftk simulate output directory (summary.json and
// requests.csv) as a simulated run with a zero RunID. The run keeps the
// simulation's configuration (Run.Sim), so that calibration can run it
// again.
func ReadSimulated(dir string) (*Run, error) {
	sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
	if err != nil {
		return nil, fmt.Errorf("%s: not a usable ftk simulate output: %w", dir, err)
	}
	rows, err := runresult.ReadRequestMetrics(filepath.Join(dir, runresult.RequestsCSVFile))
	if err != nil {
		return nil, err
	}
	r := runFromMetrics(rows)
	r.Side, r.Source, r.Model = Simulated, dir, sum.Config.Model
	cfg := sum.Config
	r.Sim = &cfg
	return r, nil
}

// runFromMetrics converts simulate's per-request rows into a run (zero
// identity, side Simulated).
func runFromMetrics(rows []runresult.RequestMetrics) *Run {
	r := &Run{Side: Simulated, Requests: make([]Request, len(rows))}
	for i, m := range rows {
		r.Requests[i] = Request{ID: m.RequestID, ArrivalS: m.ArrivalS, PromptTokens: m.PromptTokens, OutputTokens: m.OutputTokens,
			TTFTMs: m.TTFTMs, TPOTMs: m.TPOTMs, E2EMs: m.E2EMs, Completed: m.Status == runresult.StatusCompleted}
	}
	r.MakespanS = makespanS(r.Requests)
	return r
}
