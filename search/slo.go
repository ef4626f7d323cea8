package search

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ftk-dev/ftk/runresult"
)

// Target is one latency objective: a percentile of a per-request metric
// must not exceed LimitMs, for example ttft_p95_ms=500.
type Target struct {
	Metric     string  `json:"metric"`     // ttft, tpot or e2e
	Percentile int     `json:"percentile"` // 50, 90, 95 or 99
	LimitMs    float64 `json:"limit_ms"`
}

// SLO is a set of targets that must all hold.
type SLO []Target

// Name is the target's key, as ParseSLO reads it: ttft_p95_ms.
func (t Target) Name() string { return fmt.Sprintf("%s_p%d_ms", t.Metric, t.Percentile) }

// ParseSLO reads "ttft_p95_ms=500,tpot_p95_ms=50".
func ParseSLO(s string) (SLO, error) {
	var out SLO
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("SLO %q: want METRIC_pNN_ms=LIMIT, e.g. ttft_p95_ms=500", part)
		}
		var t Target
		fields := strings.Split(key, "_")
		if len(fields) != 3 || fields[2] != "ms" || !strings.HasPrefix(fields[1], "p") {
			return nil, fmt.Errorf("SLO key %q: want METRIC_pNN_ms, e.g. ttft_p95_ms", key)
		}
		t.Metric = fields[0]
		switch t.Metric {
		case "ttft", "tpot", "e2e":
		default:
			return nil, fmt.Errorf("SLO key %q: metric %q: want ttft, tpot or e2e", key, t.Metric)
		}
		p, err := strconv.Atoi(fields[1][1:])
		if err != nil || (p != 50 && p != 90 && p != 95 && p != 99) {
			return nil, fmt.Errorf("SLO key %q: percentile %q: want p50, p90, p95 or p99", key, fields[1])
		}
		t.Percentile = p
		if t.LimitMs, err = strconv.ParseFloat(val, 64); err != nil || !(t.LimitMs > 0) || math.IsInf(t.LimitMs, 0) {
			return nil, fmt.Errorf("SLO %s: limit %q must be a positive number of milliseconds", key, val)
		}
		if seen[key] {
			return nil, fmt.Errorf("SLO: %s given twice", key)
		}
		seen[key] = true
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("SLO %q: no targets; give e.g. ttft_p95_ms=500,tpot_p95_ms=50", s)
	}
	return out, nil
}

func (s SLO) String() string {
	parts := make([]string, len(s))
	for i, t := range s {
		parts[i] = fmt.Sprintf("%s=%g", t.Name(), t.LimitMs)
	}
	return strings.Join(parts, ",")
}

// Scaled returns s with every limit multiplied by f.
func (s SLO) Scaled(f float64) SLO {
	out := append(SLO(nil), s...)
	for i := range out {
		out[i].LimitMs *= f
	}
	return out
}

// stats returns the run's statistics of the target's metric.
func (t Target) stats(m *runresult.Metrics) runresult.Stats {
	switch t.Metric {
	case "ttft":
		return m.TTFTMs
	case "tpot":
		return m.TPOTMs
	}
	return m.E2EMs
}

// Of returns the target's percentile in a run's metrics (spec's
// percentile rule, as the summary reports it).
func (t Target) Of(m *runresult.Metrics) float64 {
	s := t.stats(m)
	switch t.Percentile {
	case 50:
		return s.P50
	case 90:
		return s.P90
	case 95:
		return s.P95
	}
	return s.P99
}

// perRequest returns one request's value of the target's metric (NaN when
// undefined: TPOT of a one-token output).
func (t Target) perRequest(r *runresult.RequestMetrics) float64 {
	switch t.Metric {
	case "ttft":
		return r.TTFTMs
	case "tpot":
		return r.TPOTMs
	}
	return r.E2EMs
}

// sureMiss is the number of requests above the limit that makes the
// percentile exceed it whatever the other requests do, for a run of at most
// n values: with rank p/100 x (n-1), the percentile interpolates between
// the values at floor(rank) and floor(rank)+1, so once the n - floor(rank)
// largest values all exceed the limit, so does the percentile. It does not
// decrease with n, so counting against the request total is safe when some
// requests have no value.
func (t Target) sureMiss(n int) int {
	if n < 1 {
		return 1
	}
	return n - int(math.Floor(float64(t.Percentile)/100*float64(n-1)))
}
