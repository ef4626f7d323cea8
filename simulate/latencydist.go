package simulate

import "github.com/ftk-dev/ftk/runresult"

// exactValues is how many values a latencyDist keeps for exact
// percentiles: 100,000 (800 KB a metric). A run with more completed
// requests switches to the histogram, so a run's memory does not grow
// with its request count.
const exactValues = 100_000

// latencyDist is one latency metric of a run (TTFT, TPOT, E2E, KV
// transfer): exact percentiles (spec's rule over every value) up to
// exactValues values, then a Histogram, whose percentiles are within
// HistogramErrorPct of the exact ones and whose mean stays exact. The
// Stats say which (Stats.PercentileErrorPct).
type latencyDist struct {
	exact []float64
	hist  *Histogram
}

// add records v.
func (d *latencyDist) add(v float64) {
	if d.hist == nil {
		if len(d.exact) < exactValues {
			d.exact = append(d.exact, v)
			return
		}
		d.hist = NewHistogram()
		for _, x := range d.exact {
			d.hist.Add(x)
		}
		d.exact = nil
	}
	d.hist.Add(v)
}

// count is the number of values recorded.
func (d *latencyDist) count() int {
	if d.hist != nil {
		return int(d.hist.Count())
	}
	return len(d.exact)
}

// stats summarises the values (sorting the exact ones in place).
func (d *latencyDist) stats() runresult.Stats {
	if d.hist != nil {
		return histStats(d.hist)
	}
	return runresult.StatsOf(d.exact)
}
