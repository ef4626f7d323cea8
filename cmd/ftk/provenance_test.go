package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
)

// TestSimulateNamesItsInputs: the summary (stdout and summary.json) says
// where op times come from (here the built-in roofline: no profiles), the
// trace or workload, the arrival process and the request count; a
// generated workload without --rate is announced as an offline batch at
// t=0, and --rate 0 with --workload, which would send nothing, is a usage
// error.
func TestSimulateNamesItsInputs(t *testing.T) {
	trace := filepath.Join("..", "..", "testdata", "traces", "splitwise_conv.csv")
	for _, tc := range []struct {
		name     string
		args     []string
		source   string
		arrivals string
		stderr   string
	}{
		{"trace", []string{"--trace", trace, "--num-requests", "30"}, "trace " + trace, "replay (the trace's recorded times)", ""},
		{"rescaled trace", []string{"--trace", trace, "--num-requests", "30", "--rate", "2"}, "trace " + trace, "replay scaled to 2 req/s", ""},
		{"offline batch", []string{"--workload", "fixed:64x8", "--num-requests", "12"}, "fixed:64x8 (generated)", datasets.AllAtZero,
			"simulate: no --rate and no recorded arrival times: all 12 requests arrived at t=0 (an offline batch)"},
		{"closed loop", []string{"--workload", "fixed:64x8", "--num-requests", "12", "--clients", "3"}, "fixed:64x8 (generated)",
			"closed loop: 3 clients, think time 0 s, session starts back to back", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, code := ftk(t, append([]string{"simulate", "--model", "llama-3.1-8b", "--device", "h100", "-o", dir}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
			if err != nil {
				t.Fatal(err)
			}
			n := sum.Metrics.Arrived
			if w := sum.Workload; w.Source != tc.source || w.Arrivals != tc.arrivals || w.Requests != n || n == 0 {
				t.Errorf("summary.json workload %+v, want %q, %q, %d requests", w, tc.source, tc.arrivals, n)
			}
			p := sum.CostModel.Profiles
			if len(p.Backends) != 1 || p.Backends[0] != "roofline" || p.Device != "h100" {
				t.Errorf("summary.json profiles %+v, want the roofline of h100", p)
			}
			for _, want := range []string{
				"profiles      none: the built-in roofline device model of h100 (not measured)",
				"workload      " + tc.source + ", " + tc.arrivals + ", " + strconv.Itoa(n) + " requests",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q:\n%s", want, out)
				}
			}
			if (tc.stderr == "") == strings.Contains(errOut, "arrived at t=0") || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q, want the announcement %q only for an offline batch", errOut, tc.stderr)
			}
		})
	}
	_, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:64x8", "--num-requests", "12", "--rate", "0", "-o", t.TempDir())
	if code != exitUsage || !strings.Contains(errOut, "--rate 0 with --workload sends nothing") {
		t.Errorf("--rate 0: exit %d, stderr %q", code, errOut)
	}
}
