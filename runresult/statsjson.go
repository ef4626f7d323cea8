package runresult

import "encoding/json"

// statsJSON is Stats as summary.json writes it: with no values (Count 0:
// every request rejected, or no request with two output tokens for TPOT)
// the mean and percentiles are null, not 0, so that no reader mistakes
// them for a latency of 0 ms.
type statsJSON struct {
	Count              int      `json:"count"`
	Mean               *float64 `json:"mean"`
	Std                *float64 `json:"std"`
	P50                *float64 `json:"p50"`
	P90                *float64 `json:"p90"`
	P95                *float64 `json:"p95"`
	P99                *float64 `json:"p99"`
	PercentileErrorPct float64  `json:"percentile_error_pct,omitempty"`
}

// MarshalJSON writes null for the mean and percentiles of no values.
func (s Stats) MarshalJSON() ([]byte, error) {
	j := statsJSON{Count: s.Count, PercentileErrorPct: s.PercentileErrorPct}
	if s.Count > 0 {
		j.Mean, j.Std, j.P50, j.P90, j.P95, j.P99 = &s.Mean, &s.Std, &s.P50, &s.P90, &s.P95, &s.P99
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes (null as 0).
func (s *Stats) UnmarshalJSON(data []byte) error {
	var j statsJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	val := func(p *float64) float64 {
		if p == nil {
			return 0
		}
		return *p
	}
	*s = Stats{Count: j.Count, Mean: val(j.Mean), Std: val(j.Std), P50: val(j.P50), P90: val(j.P90), P95: val(j.P95), P99: val(j.P99),
		PercentileErrorPct: j.PercentileErrorPct}
	return nil
}
