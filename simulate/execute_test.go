package simulate

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// execute runs cfg with its own workload into dir.
func execute(t *testing.T, cfg runresult.Config, dir string, chrome bool) *runresult.Summary {
	t.Helper()
	src, _, err := openSource(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	out := Outputs{Dir: dir}
	if chrome {
		out.ChromeTrace = filepath.Join(dir, "trace.json")
	}
	sum, err := Execute(mustResolve(t, cfg), src, out, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func sameRow(a, b runresult.RequestMetrics) bool {
	fa := []float64{a.ArrivalS, a.FirstTokenS, a.FinishS, a.TTFTMs, a.TPOTMs, a.E2EMs, a.MeanITLMs, a.KVTransferMs}
	fb := []float64{b.ArrivalS, b.FirstTokenS, b.FinishS, b.TTFTMs, b.TPOTMs, b.E2EMs, b.MeanITLMs, b.KVTransferMs}
	for i := range fa {
		if fa[i] != fb[i] && !(math.IsNaN(fa[i]) && math.IsNaN(fb[i])) {
			return false
		}
	}
	return a.RequestID == b.RequestID && a.PromptTokens == b.PromptTokens && a.OutputTokens == b.OutputTokens &&
		a.Preemptions == b.Preemptions && a.Status == b.Status
}

// A run writes per-request CSV and Arrow files that read back to the same
// rows, a summary with the full config, a config.yaml that reproduces the
// run, and a Chrome trace that is valid JSON.
func TestExecuteOutputs(t *testing.T) {
	cfg := testConfig()
	cfg.Engine.MaxModelLen = 2048
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-conv", RatePerS: 8, NumRequests: 400, Seed: 11}
	dir := t.TempDir()
	sum := execute(t, cfg, dir, true)

	csvRows, err := runresult.ReadRequestMetrics(filepath.Join(dir, runresult.RequestsCSVFile))
	if err != nil {
		t.Fatal(err)
	}
	arrowRows, err := runresult.ReadRequestMetrics(filepath.Join(dir, runresult.RequestsArrowFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(csvRows) != 400 || len(arrowRows) != 400 {
		t.Fatalf("%d CSV rows, %d Arrow rows, want 400", len(csvRows), len(arrowRows))
	}
	rejected := 0
	for i := range csvRows {
		if !sameRow(csvRows[i], arrowRows[i]) {
			t.Fatalf("row %d differs:\nCSV   %+v\nArrow %+v", i, csvRows[i], arrowRows[i])
		}
		if csvRows[i].Status == runresult.StatusRejected {
			rejected++
		}
	}
	if rejected != sum.Metrics.Rejected || rejected == 0 {
		t.Errorf("%d rejected rows, summary says %d (max_model_len 2048 should reject some)", rejected, sum.Metrics.Rejected)
	}

	read, err := runresult.ReadSummary(filepath.Join(dir, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(read.Config, sum.Config) || read.Metrics.Completed != sum.Metrics.Completed || read.Config.Engine.MaxModelLen != 2048 {
		t.Errorf("summary read back differs:\n%+v\n%+v", read.Config, sum.Config)
	}
	if read.CostModel.Label == "" || read.Memory.Blocks == 0 {
		t.Errorf("summary lacks the cost model label or memory plan: %+v %+v", read.CostModel, read.Memory)
	}

	again, err := runresult.LoadConfig(filepath.Join(dir, runresult.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, sum.Config) {
		t.Fatalf("config.yaml reads back as\n%+v\nwant\n%+v", again, sum.Config)
	}
	dir2 := t.TempDir()
	execute(t, again, dir2, false)
	a, _ := os.ReadFile(filepath.Join(dir, runresult.SummaryFile))
	b, _ := os.ReadFile(filepath.Join(dir2, runresult.SummaryFile))
	if !bytes.Equal(a, b) {
		t.Error("rerunning config.yaml gave a different summary.json")
	}

	trace, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(trace, &doc); err != nil {
		t.Fatalf("chrome trace is not JSON: %v", err)
	}
	// Every step slice on a stage's CPU thread is split into host before,
	// issue, wait for the GPU and host after, which add up to it; the GPU
	// thread has one span per step, from the first issue to the end of the
	// forward (issue + wait).
	count, durUs := map[string]int{}, map[string]float64{}
	for _, e := range doc.TraceEvents {
		if e["ph"] == "X" {
			name := e["name"].(string)
			count[name]++
			durUs[name] += e["dur"].(float64)
		}
	}
	if int64(count["step"]) != sum.Metrics.Steps {
		t.Errorf("chrome trace has %d step slices, the run %d steps", count["step"], sum.Metrics.Steps)
	}
	for _, part := range []string{"host_before", "issue", "gpu", "host_after"} {
		if count[part] != count["step"] {
			t.Errorf("%d %s slices for %d steps", count[part], part, count["step"])
		}
	}
	if parts := durUs["host_before"] + durUs["issue"] + durUs["wait_gpu"] + durUs["host_after"]; math.Abs(parts-durUs["step"]) > 1e-3*float64(count["step"]) {
		t.Errorf("step parts last %g us, steps %g us", parts, durUs["step"])
	}
	if fwd := durUs["issue"] + durUs["wait_gpu"]; math.Abs(fwd-durUs["gpu"]) > 1e-3*float64(count["step"]) {
		t.Errorf("GPU spans last %g us, the CPU's issue and wait %g us", durUs["gpu"], fwd)
	}
	var sb bytes.Buffer
	if err := sum.WriteText(&sb); err != nil || !bytes.Contains(sb.Bytes(), []byte("TTFT")) {
		t.Errorf("summary text: %v\n%s", err, sb.String())
	}
}

// Same seed and inputs give byte-identical outputs; another seed does not.
func TestSameSeedByteIdentical(t *testing.T) {
	cfg := testConfig()
	cfg.Layout.DP = 2
	cfg.Router = runresult.RouterLeastLoaded
	cfg.Engine.NumGPUBlocksOverride = 1000
	cfg.Workload = runresult.WorkloadConfig{Workload: "splitwise-code", RatePerS: 6, NumRequests: 500, Seed: 3}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for i, d := range dirs {
		c := cfg
		if i == 2 {
			c.Workload.Seed = 4
		}
		execute(t, c, d, true)
	}
	for _, f := range []string{runresult.RequestsCSVFile, runresult.RequestsArrowFile, runresult.SummaryFile, runresult.ConfigFile, "trace.json"} {
		a, err := os.ReadFile(filepath.Join(dirs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dirs[1], f))
		if !bytes.Equal(a, b) {
			t.Errorf("INV-9: %s differs between two runs with the same seed", f)
		}
		if c, _ := os.ReadFile(filepath.Join(dirs[2], f)); f == runresult.RequestsCSVFile && bytes.Equal(a, c) {
			t.Errorf("INV-9: %s is the same with another seed", f)
		}
	}
}

// A run that fails part way leaves no output files behind.
func TestFailedRunLeavesNoFiles(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	src := NewSliceSource(reqs([3]float64{0, 100, 10}, [3]float64{5, 100, 10}, [3]float64{4, 100, 10}))
	_, err := Execute(mustResolve(t, cfg), src, Outputs{Dir: dir, ChromeTrace: filepath.Join(dir, "t.json")}, Options{})
	if err == nil {
		t.Fatal("unsorted arrivals accepted")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("INV-10: failed run left %d files, e.g. %s", len(ents), ents[0].Name())
	}
}

// A run whose summary cannot be written (here a NaN the JSON encoder
// refuses, as a NaN calibration once gave) fails and leaves the folder's
// previous run whole: no new requests files beside the old summary and
// config, and no temporary files.
func TestExecuteCommitsOutputsAsAUnit(t *testing.T) {
	cfg := testConfig()
	cfg.Workload = runresult.WorkloadConfig{Workload: "fixed:128x16", RatePerS: 8, NumRequests: 50, Seed: 1}
	dir := t.TempDir()
	execute(t, cfg, dir, false)
	names := []string{runresult.RequestsCSVFile, runresult.RequestsArrowFile, runresult.SummaryFile, runresult.ConfigFile}
	before := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		before[n] = b
	}

	cfg.Workload.Seed, cfg.Workload.NumRequests = 2, 60
	r := mustResolve(t, cfg)
	r.cfg.Calibration.HostScale = math.NaN() // the summary's copy only: the run itself is valid
	src, _, err := openSource(cfg.Workload)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(r, src, Outputs{Dir: dir}, Options{}); err == nil {
		t.Fatal("Execute wrote a summary holding NaN")
	}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, before[n]) {
			t.Errorf("%s changed by a failed run: the folder now mixes two runs", n)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(names) {
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		t.Errorf("folder holds %v, want only %v", got, names)
	}
}
