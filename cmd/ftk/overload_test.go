package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// simulate warns on stdout, and in summary.json, when the offered load
// exceeds what the engines serve; a stable run does not.
func TestSimulateWarnsOverCapacity(t *testing.T) {
	for _, c := range []struct {
		rate string
		want bool
	}{{"50", true}, {"10", false}} {
		dir := filepath.Join(t.TempDir(), "sim")
		out, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--workload", "fixed:1024x256", "--rate", c.rate,
			"--num-requests", "1000", "-o", dir)
		if code != 0 {
			t.Fatalf("rate %s: exit %d: %s", c.rate, code, errOut)
		}
		warned := strings.Contains(out, "WARNING       offered load exceeds capacity") && strings.Contains(out, "the waiting queue grows without bound")
		sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
		if err != nil {
			t.Fatal(err)
		}
		if warned != c.want || (sum.Metrics.Overload != nil) != c.want {
			t.Errorf("rate %s: warned %v, summary.json overload %+v; want %v\n%s", c.rate, warned, sum.Metrics.Overload, c.want, out)
		}
	}
}
