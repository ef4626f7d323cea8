package datasets

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
)

func TestComputeStats(t *testing.T) {
	// Gaps 1, 1, 2, 4: mean 2, population std sqrt((1+1+0+4)/4) = sqrt(1.5).
	reqs := []spec.Request{
		{ArrivalS: 10, PromptTokens: 100, OutputTokens: 1},
		{ArrivalS: 11, PromptTokens: 300, OutputTokens: 2},
		{ArrivalS: 12, PromptTokens: 200, OutputTokens: 3},
		{ArrivalS: 14, PromptTokens: 400, OutputTokens: 4},
		{ArrivalS: 18, PromptTokens: 1000, OutputTokens: 10},
	}
	st := ComputeStats(reqs)
	prompts := []float64{100, 300, 200, 400, 1000}
	checks := []struct {
		name      string
		got, want float64
	}{
		{"count", float64(st.Count), 5},
		{"prompt mean", st.Prompt.Mean, 400},
		{"prompt min", st.Prompt.Min, 100},
		{"prompt max", st.Prompt.Max, 1000},
		{"prompt p50", st.Prompt.P50, 300},
		// rank 0.9 x 4 = 3.6: 400 + 0.6 x (1000 - 400)
		{"prompt p90", st.Prompt.P90, 760},
		{"prompt p99", st.Prompt.P99, spec.Percentile(prompts, 99)},
		{"output mean", st.Output.Mean, 4},
		{"duration", st.DurationS, 8},
		{"rate", st.RateRPS, 0.5},
		{"cv", st.InterArrivalCV, math.Sqrt(1.5) / 2},
	}
	for _, c := range checks {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s = %g, want %g", c.name, c.got, c.want)
		}
	}
	var buf bytes.Buffer
	if err := st.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"requests: 5", "arrivals: 0.5 req/s over 8 s, inter-arrival CV 0.612", "prompt  400.0  100  300.0  760.0"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, buf.String())
		}
	}

	noArr := ComputeStats([]spec.Request{{ArrivalS: math.NaN(), PromptTokens: 5, OutputTokens: 6}})
	if noArr.HasArrivals || !math.IsNaN(noArr.RateRPS) || noArr.Prompt.P99 != 5 {
		t.Errorf("length-only stats: %+v", noArr)
	}
	buf.Reset()
	noArr.WriteText(&buf)
	if !strings.Contains(buf.String(), "arrivals: none recorded") {
		t.Errorf("length-only text:\n%s", buf.String())
	}
}

// TestStatsRealTrace checks the stats of splitwise_conv.csv against values
// computed independently here from the raw rows.
func TestStatsRealTrace(t *testing.T) {
	reqs, err := ReadTrace(tracePath(t, "splitwise_conv.csv"))
	if err != nil {
		t.Fatal(err)
	}
	st := ComputeStats(reqs)
	var out []float64
	for _, r := range reqs {
		out = append(out, float64(r.OutputTokens))
	}
	if st.Output.P90 != spec.Percentile(out, 90) || st.Count != 19366 {
		t.Errorf("P90 output %g, spec.Percentile says %g", st.Output.P90, spec.Percentile(out, 90))
	}
	span := reqs[len(reqs)-1].ArrivalS - reqs[0].ArrivalS
	if st.DurationS != span || math.Abs(st.RateRPS-19365/span) > 1e-12 {
		t.Errorf("duration %g rate %g, want %g and %g", st.DurationS, st.RateRPS, span, 19365/span)
	}
}
