package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// A trace on an epoch-seconds clock replays as the same trace from zero:
// its times are stored relative to the first arrival, so every latency
// equals that of the trace shifted to start at 0. A trace in epoch
// microseconds or milliseconds read as seconds (1.7e15 s, 1.7e12 s: 0 ms
// latencies or identical TTFTs once) is refused with the reason and the
// fix, as is a rate so low its times leave that range.
func TestArrivalTimesKeepTheirPrecision(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, t0, unit float64) string {
		var b strings.Builder
		b.WriteString("arrived_at,num_prefill_tokens,num_decode_tokens\n")
		for i := range 40 {
			fmt.Fprintf(&b, "%.6f,%d,%d\n", t0+float64(i)*0.137*unit, 300+37*i%200, 20+i%17)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rows := func(trace string) []runresult.RequestMetrics {
		out := filepath.Join(dir, filepath.Base(trace)+".out")
		if _, errOut, code := ftk(t, "simulate", "--model", "llama-3.1-8b", "--trace", trace, "-o", out); code != 0 {
			t.Fatalf("%s: exit %d: %s", trace, code, errOut)
		}
		r, err := runresult.ReadRequestMetrics(filepath.Join(out, runresult.RequestsCSVFile))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	zero, epoch := rows(write("zero.csv", 0, 1)), rows(write("epoch.csv", 1.7e9, 1))
	for i := range zero {
		if zero[i].TTFTMs != epoch[i].TTFTMs || zero[i].E2EMs != epoch[i].E2EMs || zero[i].TPOTMs != epoch[i].TPOTMs {
			t.Fatalf("request %d: TTFT %v / %v ms, E2E %v / %v ms from zero / on an epoch clock",
				zero[i].RequestID, zero[i].TTFTMs, epoch[i].TTFTMs, zero[i].E2EMs, epoch[i].E2EMs)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", write("us.csv", 1.7e15, 1e6)}, "epoch milliseconds or microseconds"},
		{[]string{"--trace", write("ms.csv", 1.7e12, 1e3)}, "epoch milliseconds or microseconds"},
		{[]string{"--workload", "fixed:10x10", "--rate", "1e-300", "--num-requests", "3"}, "--rate"},
	} {
		args := append([]string{"simulate", "--model", "llama-3.1-8b", "-o", filepath.Join(dir, "bad")}, tc.args...)
		_, errOut, code := ftk(t, args...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want a refusal saying %q", tc.args, code, errOut, tc.want)
		}
	}
}
