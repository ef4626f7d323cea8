package validate

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// handRun builds a run of four completed requests (TTFT 10..40 ms, TPOT 5
// ms, 11 output tokens) with the given makespan.
func handRun(side Side, config, workload string, rep int, makespanS float64) *Run {
	r := &Run{Side: side, ID: RunID{config, workload, rep}, Source: side.String() + "-" + RunID{config, workload, rep}.String(), MakespanS: makespanS}
	for i := range 4 {
		ttft := float64(10 * (i + 1))
		r.Requests = append(r.Requests, Request{ID: i, ArrivalS: float64(i), PromptTokens: 100, OutputTokens: 11,
			TTFTMs: ttft, TPOTMs: 5, E2EMs: ttft + 50, Completed: true})
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// handExample is the hand-made comparison of the tests:
//
//	A/w1: measured 10, 12, 11 s (median 11); simulated 9.9, 12.1, 11.55 (median 11.55): +5%
//	A/w2: measured 20, 22 (median 21); simulated 16.8, 16.8: -20%
//	B/w1: measured 100, 100, 100; one unnumbered simulation 110: +10%, 3 pairs
//	B/w3: measured only: unpaired
func handExample() []*Run {
	return []*Run{
		handRun(Measured, "A", "w1", 1, 10), handRun(Measured, "A", "w1", 2, 12), handRun(Measured, "A", "w1", 3, 11),
		handRun(Simulated, "A", "w1", 1, 9.9), handRun(Simulated, "A", "w1", 2, 12.1), handRun(Simulated, "A", "w1", 3, 11.55),
		handRun(Measured, "A", "w2", 1, 20), handRun(Measured, "A", "w2", 2, 22),
		handRun(Simulated, "A", "w2", 1, 16.8), handRun(Simulated, "A", "w2", 2, 16.8),
		handRun(Measured, "B", "w1", 1, 100), handRun(Measured, "B", "w1", 2, 100), handRun(Measured, "B", "w1", 3, 100),
		handRun(Simulated, "B", "w1", 0, 110),
		handRun(Measured, "B", "w3", 1, 5),
	}
}

func TestTableArithmeticByHand(t *testing.T) {
	metrics, err := Metrics()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(handExample(), metrics)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		config, workload, metric string
		pairs                    int
		meas, sim, ape, signed   float64
	}
	for _, w := range []want{
		{"A", "w1", "makespan_s", 3, 11, 11.55, 5, 5},
		{"A", "w2", "makespan_s", 2, 21, 16.8, 20, -20},
		{"B", "w1", "makespan_s", 3, 100, 110, 10, 10},
		// request_per_s = 4 / makespan: medians 4/11 and 4/11.55.
		{"A", "w1", "request_per_s", 3, 4.0 / 11, 4.0 / 11.55, (1 - 11/11.55) * 100, (11/11.55 - 1) * 100},
		// decode_tok_s = 44 output tokens / makespan; A/w2 measured median of 44/20 and 44/22.
		{"A", "w2", "decode_tok_s", 2, (44.0/20 + 44.0/22) / 2, 44 / 16.8, math.Abs(44/16.8/((44.0/20+44.0/22)/2)-1) * 100, (44/16.8/((44.0/20+44.0/22)/2) - 1) * 100},
		// Latencies are equal on both sides: 0% error. P95 TTFT of 10,20,30,40 = 30+0.85*10.
		{"B", "w1", "ttft_p95_ms", 3, 38.5, 38.5, 0, 0},
		{"B", "w1", "tpot_p95_ms", 3, 5, 5, 0, 0},
		{"A", "w1", "e2e_p95_ms", 3, 88.5, 88.5, 0, 0},
	} {
		var got *Row
		for i, r := range rep.Rows {
			if r.Config == w.config && r.Workload == w.workload && r.Metric == w.metric {
				got = &rep.Rows[i]
			}
		}
		if got == nil {
			t.Errorf("no row %s/%s %s", w.config, w.workload, w.metric)
			continue
		}
		if got.Pairs != w.pairs || !near(got.MeasuredMedian, w.meas) || !near(got.SimulatedMedian, w.sim) || !near(got.APEPct, w.ape) || !near(got.SignedPct, w.signed) {
			t.Errorf("%s/%s %s: got pairs %d meas %v sim %v APE %v signed %v; want %d %v %v %v %v", w.config, w.workload, w.metric,
				got.Pairs, got.MeasuredMedian, got.SimulatedMedian, got.APEPct, got.SignedPct, w.pairs, w.meas, w.sim, w.ape, w.signed)
		}
	}
	if len(rep.Rows) != 3*len(DefaultMetricNames) {
		t.Errorf("%d rows, want %d (3 config/workload x %d metrics)", len(rep.Rows), 3*len(DefaultMetricNames), len(DefaultMetricNames))
	}
	var mk *Overall
	for i, o := range rep.Overall {
		if o.Metric == "makespan_s" {
			mk = &rep.Overall[i]
		}
	}
	// Overall makespan over APEs 5, 20, 10 and signed +5, -20, +10.
	if mk == nil || mk.Rows != 3 || mk.Pairs != 8 || !near(mk.MAPEPct, 35.0/3) || !near(mk.MedianAPEPct, 10) || !near(mk.MaxAPEPct, 20) || !near(mk.MeanSignedPct, -5.0/3) {
		t.Errorf("overall makespan_s = %+v, want rows 3, pairs 8, MAPE 11.667, median APE 10, max 20, mean signed -1.667", mk)
	}
	if len(rep.Unpaired) != 1 || rep.Unpaired[0].Run.ID != (RunID{"B", "w3", 1}) || !strings.Contains(rep.Unpaired[0].Reason, "no simulated run of B/w3") {
		t.Errorf("unpaired = %+v, want the measured B/w3/r1", rep.Unpaired)
	}
}

func TestSummarizeEvenMedian(t *testing.T) {
	rows := []Row{{Metric: "x", Pairs: 1, APEPct: 1, SignedPct: -1}, {Metric: "x", Pairs: 2, APEPct: 4, SignedPct: 4}, {Metric: "x", Pairs: 1, APEPct: 2, SignedPct: 2}, {Metric: "x", Pairs: 1, APEPct: 9, SignedPct: -9}}
	o := Summarize(rows, []Metric{{Name: "x"}})
	if len(o) != 1 || o[0].Rows != 4 || o[0].Pairs != 5 || !near(o[0].MAPEPct, 4) || !near(o[0].MedianAPEPct, 3) || !near(o[0].MaxAPEPct, 9) || !near(o[0].MeanSignedPct, -1) {
		t.Errorf("got %+v, want rows 4, pairs 5, MAPE 4, median 3 (between 2 and 4), max 9, mean signed -1", o)
	}
}

func TestOutputLayout(t *testing.T) {
	metrics, _ := Metrics()
	rep, err := Compare(handExample(), metrics)
	if err != nil {
		t.Fatal(err)
	}
	var text, md, csvRows, csvOverall bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteCSV(&csvRows); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteOverallCSV(&csvOverall); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, out string
		want      []string
	}{
		{"text", text.String(), []string{
			"CONFIG  WORKLOAD  METRIC         PAIRED RUNS  MEASURED (MEDIAN)  SIMULATED (MEDIAN)  APE    SIGNED ERROR",
			"A       w1        makespan_s     3            11.00              11.55               5.0%   +5.0%",
			"A       w2        makespan_s     2            21.00              16.80               20.0%  -20.0%",
			"METRIC         ROWS  PAIRED RUNS  MAPE   MEDIAN APE  MAX APE  MEAN SIGNED ERROR",
			"makespan_s     3     8            11.7%  10.0%       20.0%    -1.7%",
			"Unpaired runs (1, not in the tables):",
			"measured B/w3/r1 (measured-B/w3/r1): no simulated run of B/w3",
		}},
		{"markdown", md.String(), []string{
			"| config | workload | metric | paired runs | measured (median) | simulated (median) | APE | signed error |\n| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
			"| B | w1 | makespan_s | 3 | 100.0 | 110.0 | 10.0% | +10.0% |",
			"| metric | rows | paired runs | MAPE | median APE | max APE | mean signed error |",
			"| makespan_s | 3 | 8 | 11.7% | 10.0% | 20.0% | -1.7% |",
			"## Unpaired runs (1, not in the tables)",
		}},
		{"csv", csvRows.String(), []string{
			"config,workload,metric,paired_runs,measured_median,simulated_median,ape_pct,signed_error_pct\n",
			"A,w2,makespan_s,2,21,16.8,19.999999999999996,-19.999999999999996\n",
		}},
		{"overall csv", csvOverall.String(), []string{
			"metric,rows,paired_runs,mape_pct,median_ape_pct,max_ape_pct,mean_signed_error_pct\n",
			"makespan_s,3,8,11.66666666666666",
		}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.out, w) {
				t.Errorf("%s output lacks %q:\n%s", c.name, w, c.out)
			}
		}
	}
	// Metric order within a row group is the default order.
	lines := strings.Split(csvRows.String(), "\n")
	for i, name := range DefaultMetricNames {
		if !strings.HasPrefix(lines[1+i], "A,w1,"+name+",") {
			t.Errorf("csv line %d = %q, want metric %s", i+2, lines[1+i], name)
		}
	}
}
