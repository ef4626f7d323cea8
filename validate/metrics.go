package validate

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ftk-dev/ftk/spec"
)

// Metric is one number computed from a run.
type Metric struct {
	Name  string // e.g. "ttft_p95_ms"
	Label string // e.g. "P95 TTFT (ms)"
	Value func(*Run) float64
}

// DefaultMetricNames are the metrics every comparison reports: the numbers
// serving papers and vLLM's benchmark summary lead with.
var DefaultMetricNames = []string{"decode_tok_s", "request_per_s", "e2e_p95_ms", "tpot_p95_ms", "ttft_p95_ms", "makespan_s"}

// MetricNames lists every metric name Metrics accepts, sorted: the defaults
// plus {ttft,tpot,e2e}_{mean,p50,p90,p95,p99}_ms and total_tok_s.
func MetricNames() []string {
	var names []string
	for n := range metricCatalog() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Metrics returns the default metrics followed by the named extra ones, in
// order and without duplicates.
func Metrics(extra ...string) ([]Metric, error) {
	cat := metricCatalog()
	var out []Metric
	seen := map[string]bool{}
	for _, n := range append(append([]string{}, DefaultMetricNames...), extra...) {
		n = strings.TrimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		m, ok := cat[n]
		if !ok {
			return nil, fmt.Errorf("unknown metric %q (known: %s)", n, strings.Join(MetricNames(), ", "))
		}
		seen[n] = true
		out = append(out, m)
	}
	return out, nil
}

func metricCatalog() map[string]Metric {
	cat := map[string]Metric{
		"decode_tok_s": {Label: "decode throughput (tok/s)", Value: func(r *Run) float64 {
			n := 0
			for _, q := range r.Requests {
				if q.Completed {
					n += q.OutputTokens
				}
			}
			return float64(n) / r.MakespanS
		}},
		"total_tok_s": {Label: "total throughput (tok/s)", Value: func(r *Run) float64 {
			n := 0
			for _, q := range r.Requests {
				if q.Completed {
					n += q.OutputTokens + q.PromptTokens
				}
			}
			return float64(n) / r.MakespanS
		}},
		"request_per_s": {Label: "request throughput (req/s)", Value: func(r *Run) float64 {
			return float64(r.Completed()) / r.MakespanS
		}},
		"makespan_s": {Label: "makespan (s)", Value: func(r *Run) float64 { return r.MakespanS }},
	}
	lat := []struct {
		key, label string
		get        func(Request) float64
	}{
		{"ttft", "TTFT", func(q Request) float64 { return q.TTFTMs }},
		{"tpot", "TPOT", func(q Request) float64 { return q.TPOTMs }},
		{"e2e", "E2E", func(q Request) float64 { return q.E2EMs }},
	}
	for _, l := range lat {
		get := l.get
		cat[l.key+"_mean_ms"] = Metric{Label: "mean " + l.label + " (ms)", Value: func(r *Run) float64 {
			return mean(completedValues(r, get))
		}}
		for _, p := range []int{50, 90, 95, 99} {
			cat[fmt.Sprintf("%s_p%d_ms", l.key, p)] = Metric{Label: fmt.Sprintf("P%d %s (ms)", p, l.label), Value: func(r *Run) float64 {
				return spec.Percentile(completedValues(r, get), float64(p))
			}}
		}
	}
	for n, m := range cat {
		m.Name = n
		cat[n] = m
	}
	return cat
}

// completedValues returns one value per completed request (NaN kept, as
// spec.Percentile ignores it).
func completedValues(r *Run, get func(Request) float64) []float64 {
	v := make([]float64, 0, len(r.Requests))
	for _, q := range r.Requests {
		if q.Completed {
			v = append(v, get(q))
		}
	}
	return v
}

// mean is the mean of the non-NaN values; NaN when there is none.
func mean(v []float64) float64 {
	s, n := 0.0, 0
	for _, x := range v {
		if !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}
