package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// Closed-loop sessions with prefix caching on (the default) and off: the
// summary reports the hit rate, requests.csv the cached prompt tokens,
// config.yaml the clients; the same run without caching caches nothing
// and has a higher mean TTFT.
func TestSimulatePrefixCachingAndClients(t *testing.T) {
	args := []string{"simulate", "--model", "llama-3.1-8b", "--workload", "sessions:groups=4,users=2,system=1000,turns=4,question=100,output=40",
		"--clients", "16", "--think-time", "0.5", "--num-requests", "200", "--seed", "2"}
	on, off := t.TempDir(), t.TempDir()
	out, errOut, code := ftk(t, append(args, "-o", on)...)
	if code != 0 || !strings.Contains(out, "prefix cache  hit rate") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	if _, errOut, code = ftk(t, append(args, "-o", off, "--no-enable-prefix-caching")...); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sOn, err := runresult.ReadSummary(filepath.Join(on, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	sOff, err := runresult.ReadSummary(filepath.Join(off, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	pc := sOn.Metrics.PrefixCache
	if !pc.Enabled || pc.HitRate < 0.5 || sOff.Metrics.PrefixCache.Enabled || sOn.Config.Workload.Clients != 16 || sOn.Metrics.PeakConcurrency > 16 {
		t.Errorf("on %+v (peak %d, clients %d), off %+v", pc, sOn.Metrics.PeakConcurrency, sOn.Config.Workload.Clients, sOff.Metrics.PrefixCache)
	}
	if !(sOn.Metrics.TTFTMs.Mean < sOff.Metrics.TTFTMs.Mean) {
		t.Errorf("TTFT mean %g ms with caching, %g without", sOn.Metrics.TTFTMs.Mean, sOff.Metrics.TTFTMs.Mean)
	}
	rows, err := runresult.ReadRequestMetrics(filepath.Join(on, runresult.RequestsArrowFile))
	if err != nil {
		t.Fatal(err)
	}
	var cached int64
	for _, r := range rows {
		cached += int64(r.CachedPromptTokens)
	}
	if cached != pc.HitTokens {
		t.Errorf("requests.arrow holds %d cached prompt tokens, the summary %d", cached, pc.HitTokens)
	}
	cfg, err := os.ReadFile(filepath.Join(on, runresult.ConfigFile))
	if err != nil || !strings.Contains(string(cfg), "clients: 16") || !strings.Contains(string(cfg), "enable_prefix_caching: true") {
		t.Errorf("config.yaml (%v):\n%s", err, cfg)
	}
}

func TestSimulateArrivalOptionsBadInput(t *testing.T) {
	base := []string{"simulate", "--model", "llama-3.1-8b", "-o", t.TempDir()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workload", "sessions:groups=1,system=10,turns=3,question=5,output=5", "--rate", "1", "--num-requests", "10"}, "run them with clients"},
		{[]string{"--workload", "fixed:10x10", "--stages", "10s@1", "--rate", "2", "--num-requests", "10"}, "a rate or rate stages, not both"},
		{[]string{"--workload", "fixed:10x10", "--stages", "10@1", "--num-requests", "10"}, "want DURATIONs@RATE"},
		{[]string{"--workload", "fixed:10x10", "--think-time", "1", "--num-requests", "10"}, "needs closed-loop clients"},
	} {
		_, errOut, code := ftk(t, append(base, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestDatasetsImportMooncake(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m.csv")
	_, errOut, code := ftkDatasets(t, "import", "mooncake", filepath.Join("..", "..", "datasets", "testdata", "mooncake_small.jsonl"), "-o", out)
	if code != 0 || !strings.Contains(errOut, "5 requests, 12 hash ids of 512 tokens") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	l := datasetsFileLines(t, out)
	if l[0] != "arrived_at,num_prefill_tokens,num_decode_tokens,hash_ids,hash_block_tokens" || l[4] != "1.2,2000,100,0 1 2 6,512" {
		t.Errorf("trace:\n%s", strings.Join(l, "\n"))
	}
	// Mooncake-style sharing: request 1 finds ids 0 1 (1,024 tokens) of
	// request 0; request 3 finds request 0's 1,200 prompt tokens.
	dir := t.TempDir()
	if _, errOut, code = ftk(t, "simulate", "--model", "llama-3.1-8b", "--trace", out, "-o", dir); code != 0 {
		t.Fatalf("simulate exit %d: %s", code, errOut)
	}
	sum, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := sum.Metrics.PrefixCache.HitTokens; got != 1024+1200 {
		t.Errorf("%d prompt tokens cached, want 1024 + 1200", got)
	}
}
