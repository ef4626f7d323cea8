package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/runresult"
)

// valSimulate runs ftk simulate of llama-3.1-8b on a small fixed workload
// into dir and returns dir.
func valSimulate(t *testing.T, dir, workload string, seed int, extra ...string) string {
	t.Helper()
	args := append([]string{"simulate", "--model", "llama-3.1-8b", "--device", "h100", "--workload", workload,
		"--rate", "8", "--num-requests", "30", "--seed", strconv.Itoa(seed), "-o", dir}, extra...)
	if _, errOut, code := ftk(t, args...); code != 0 {
		t.Fatalf("simulate exit %d: %s", code, errOut)
	}
	return dir
}

// valBenchmark is the part of a vLLM serving benchmark result JSON that
// ftk validate reads.
type valBenchmark struct {
	ModelID    string      `json:"model_id"`
	Duration   float64     `json:"duration"`
	Completed  int         `json:"completed"`
	InputLens  []int       `json:"input_lens"`
	OutputLens []int       `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Errors     []string    `json:"errors"`
}

// valBenchmarkFrom writes a simulation's requests as a vLLM benchmark
// result JSON of model: TTFT, then output-1 gaps of TPOT each. edit, when
// set, rewrites the JSON text before it is saved.
func valBenchmarkFrom(t *testing.T, simDir, path, model string, edit func(string) string) {
	t.Helper()
	rows, err := runresult.ReadRequestMetrics(filepath.Join(simDir, runresult.RequestsCSVFile))
	if err != nil {
		t.Fatal(err)
	}
	b := valBenchmark{ModelID: model}
	first, last := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		b.InputLens = append(b.InputLens, r.PromptTokens)
		b.OutputLens = append(b.OutputLens, r.OutputTokens)
		b.TTFTs = append(b.TTFTs, r.TTFTMs/1e3)
		itl := []float64{}
		for range r.OutputTokens - 1 {
			itl = append(itl, r.TPOTMs/1e3)
		}
		b.ITLs = append(b.ITLs, itl)
		b.Errors = append(b.Errors, "")
		b.Completed++
		first, last = min(first, r.ArrivalS), max(last, r.FinishS)
	}
	b.Duration = last - first
	data, err := json.MarshalIndent(b, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if edit != nil {
		text = edit(text)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// valCSVFrom writes a simulation's requests as a measured per-request CSV
// with every TPOT multiplied by tpotFactor.
func valCSVFrom(t *testing.T, simDir, path string, tpotFactor float64) {
	t.Helper()
	rows, err := runresult.ReadRequestMetrics(filepath.Join(simDir, runresult.RequestsCSVFile))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("request_id,arrival_s,prompt_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%d,%v,%d,%d,%v,%v,%v\n", r.RequestID, r.ArrivalS, r.PromptTokens, r.OutputTokens, r.TTFTMs, r.TPOTMs*tpotFactor, r.E2EMs)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestValidateE2E(t *testing.T) {
	dir := t.TempDir()
	bench := filepath.Join(dir, "bench")
	os.MkdirAll(bench, 0o755)
	short := valSimulate(t, filepath.Join(dir, "sim", "h100-tp1__short"), "fixed:256x64", 1)
	long := valSimulate(t, filepath.Join(dir, "sim", "h100-tp1__long"), "fixed:2048x32", 2)
	// Two repetitions of the short workload, as vLLM would save them, and
	// the long one as a CSV whose TPOT is 20% above the simulation.
	for _, rep := range []string{"r1", "r2"} {
		valBenchmarkFrom(t, short, filepath.Join(bench, "h100-tp1__short__"+rep+".json"), "meta-llama/Llama-3.1-8B-Instruct", nil)
	}
	valCSVFrom(t, long, filepath.Join(bench, "h100-tp1__long__r1.csv"), 1.2)
	// A measured run of a workload that was not simulated.
	valCSVFrom(t, long, filepath.Join(bench, "h100-tp1__code__r1.csv"), 1)

	report := filepath.Join(dir, "report")
	out, errOut, code := ftk(t, "validate", "e2e", "--measured", bench, "--simulated", filepath.Join(dir, "sim"), "-o", report, "--metrics", "tpot_mean_ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"CONFIG    WORKLOAD  METRIC         PAIRED RUNS  MEASURED (MEDIAN)  SIMULATED (MEDIAN)  APE",
		"METRIC         ROWS  PAIRED RUNS  MAPE",
		"Unpaired runs (1, not in the tables):",
		"measured h100-tp1/code/r1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// TPOT rows of the long workload show the distortion (simulated
	// against measured: 1/1.2 - 1), everything else 0%.
	rows := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) != 8 || f[0] != "h100-tp1" {
			continue
		}
		rows++
		want := "+0.0%"
		if f[1] == "long" && strings.HasPrefix(f[2], "tpot_") {
			want = "-16.7%"
		}
		if f[7] != want {
			t.Errorf("row %q: signed error %s, want %s", line, f[7], want)
		}
		if pairs := map[string]string{"short": "2", "long": "1"}[f[1]]; f[3] != pairs {
			t.Errorf("row %q: %s paired runs, want %s", line, f[3], pairs)
		}
	}
	if rows != 2*7 {
		t.Errorf("%d table rows, want 2 workloads x 7 metrics:\n%s", rows, out)
	}
	for _, f := range []string{"errors.md", "errors.csv", "overall.csv", "unpaired.csv", "cdf__h100-tp1__short.png", "cdf__h100-tp1__long.png"} {
		if st, err := os.Stat(filepath.Join(report, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	md, _, code := ftk(t, "validate", "e2e", "-m", filepath.Join(bench, "h100-tp1__short__r1.json"), "-s", short, "--format", "markdown")
	if code != 0 || !strings.Contains(md, "| config | workload | metric | paired runs |") || !strings.Contains(md, "## Overall per metric") {
		t.Errorf("markdown (exit %d):\n%s", code, md)
	}
	csvOut, _, code := ftk(t, "validate", "e2e", "-m", filepath.Join(bench, "h100-tp1__short__r1.json"), "-s", short, "--format", "csv")
	if code != 0 || !strings.HasPrefix(csvOut, "config,workload,metric,paired_runs,") || !strings.Contains(csvOut, "\n\nmetric,rows,paired_runs,mape_pct,") {
		t.Errorf("csv (exit %d):\n%s", code, csvOut)
	}
}

func TestValidateBadInput(t *testing.T) {
	dir := t.TempDir()
	sim := valSimulate(t, filepath.Join(dir, "h100-tp1__short"), "fixed:256x64", 1)
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bench := func(name, model string, edit func(string) string) string {
		p := filepath.Join(dir, name)
		valBenchmarkFrom(t, sim, p, model, edit)
		return p
	}
	llama8 := "meta-llama/Llama-3.1-8B-Instruct"
	// Drop the last request from every per-request array.
	dropLast := func(s string) string {
		var b valBenchmark
		json.Unmarshal([]byte(s), &b)
		n := len(b.InputLens) - 1
		b.InputLens, b.OutputLens, b.TTFTs, b.ITLs, b.Errors, b.Completed = b.InputLens[:n], b.OutputLens[:n], b.TTFTs[:n], b.ITLs[:n], b.Errors[:n], n
		data, _ := json.Marshal(b)
		return string(data)
	}
	nanTTFT := func(s string) string {
		i := strings.Index(s, `"ttfts": [`) + len(`"ttfts": [`)
		j := strings.Index(s[i:], ",")
		return s[:i] + "\n  NaN" + s[i+j:]
	}
	empty := func(string) string {
		return `{"model_id": "x", "duration": 0, "completed": 0, "input_lens": [], "output_lens": [], "ttfts": [], "itls": [], "errors": []}`
	}
	csvHeader := "request_id,arrival_s,prompt_tokens,output_tokens,ttft_ms,tpot_ms,e2e_ms\n"
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"other model", []string{"-m", bench("h100-tp1__short__r1.json", "meta-llama/Llama-3.3-70B-Instruct", nil), "-s", sim},
			1, `model "meta-llama/Llama-3.3-70B-Instruct", but the simulation ` + sim + ` ran "llama-3.1-8b"`},
		{"request count", []string{"-m", bench("h100-tp1__short__r2.json", llama8, dropLast), "-s", sim},
			1, "29 requests, but the simulation " + sim + " of h100-tp1/short/r2 has 30: they did not replay the same trace"},
		{"NaN in JSON", []string{"-m", bench("h100-tp1__short__r3.json", llama8, nanTTFT), "-s", sim},
			1, "h100-tp1__short__r3.json: ttfts[0] is NaN, infinite or null for a completed request"},
		{"NaN in CSV", []string{"-m", write("h100-tp1__short__r4.csv", csvHeader+"0,0,256,64,20,9,600\n1,0.1,256,64,nan,9,600\n"), "-s", sim},
			1, "h100-tp1__short__r4.csv line 3 column 5 (ttft_ms): nan: want a finite, non-negative value"},
		{"empty JSON", []string{"-m", bench("h100-tp1__short__r5.json", llama8, empty), "-s", sim},
			1, "h100-tp1__short__r5.json: empty run (no requests)"},
		{"empty CSV", []string{"-m", write("h100-tp1__short__r6.csv", csvHeader), "-s", sim},
			1, "h100-tp1__short__r6.csv: empty run (no requests)"},
		{"no identity", []string{"-m", bench("benchmark-4.0qps.json", llama8, nil), "-s", sim},
			1, "benchmark-4.0qps.json: cannot tell its configuration and workload"},
		{"no simulated runs", []string{"-m", dir}, 2, "validate e2e needs --measured and --simulated runs, or a --manifest"},
		{"unknown metric", []string{"-m", dir, "-s", sim, "--metrics", "ttft_p42_ms"}, 2, `--metrics: unknown metric "ttft_p42_ms"`},
		{"bad format", []string{"-m", dir, "-s", sim, "--format", "html"}, 2, `--format "html": want text, markdown or csv`},
		{"argument", []string{"-m", dir, "-s", sim, "extra"}, 2, "takes no arguments"},
		{"missing file", []string{"-m", filepath.Join(dir, "nope__w.json"), "-s", sim}, 1, "no such file"},
	} {
		out, errOut, code := ftk(t, append([]string{"validate", "e2e"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("%s: exit %d (want %d), stdout %q, stderr %q; want one line containing %q", c.name, code, c.code, out, errOut, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"calibrate", "-m", dir, "-s", sim}, 2, "needs -o FILE"},
		{[]string{"calibrate", "-m", dir, "-s", sim, "-o", filepath.Join(dir, "c.yaml"), "--max-evaluations", "3"}, 2, "--max-evaluations 3: want at least 10"},
		{[]string{"ops", filepath.Join(dir, "bundle.arrow")}, 2, "validate ops needs two arguments, BUNDLE and DATASET, got 1"},
		{[]string{"ops", filepath.Join(dir, "nope.arrow"), dir}, 1, "nope.arrow"},
	} {
		out, errOut, code := ftk(t, append([]string{"validate"}, c.args...)...)
		if code != c.code || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 || out != "" {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q; want one line containing %q", c.args, code, c.code, out, errOut, c.want)
		}
	}
}

// TestValidateCalibrate simulates "measurements" with a known host scale,
// fits it back with leave-one-workload-out, and runs ftk simulate
// with the calibration file.
func TestValidateCalibrate(t *testing.T) {
	dir := t.TempDir()
	truth := filepath.Join(dir, "truth.yaml")
	if err := os.WriteFile(truth, []byte("host_scale: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bench := filepath.Join(dir, "bench")
	os.MkdirAll(bench, 0o755)
	for i, w := range []struct{ name, spec string }{{"short", "fixed:256x64"}, {"long", "fixed:2048x64"}} {
		m := valSimulate(t, filepath.Join(dir, "truth", w.name), w.spec, i+1, "--calibration", truth)
		valCSVFrom(t, m, filepath.Join(bench, "h100-tp1__"+w.name+"__r1.csv"), 1)
		valSimulate(t, filepath.Join(dir, "sim", "h100-tp1__"+w.name), w.spec, i+1)
	}
	cal := filepath.Join(dir, "cal.yaml")
	out, errOut, code := ftk(t, "validate", "calibrate", "-m", bench, "-s", filepath.Join(dir, "sim"),
		"--params", "host_scale", "--max-evaluations", "60", "-o", cal)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Leave one workload out", "APE HELD OUT", "host_scale"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	c, err := runresult.LoadCalibration(cal)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(math.Log(c.HostScale/4)) > math.Log(1.25) || len(c.FamilyScale) != 0 {
		t.Errorf("fitted %+v, injected host_scale 4", c)
	}
	again := valSimulate(t, filepath.Join(dir, "again"), "fixed:256x64", 1, "--calibration", cal)
	sum, err := runresult.ReadSummary(filepath.Join(again, runresult.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Config.Calibration.HostScale != c.HostScale {
		t.Errorf("simulate recorded calibration %+v, file has %+v", sum.Config.Calibration, c)
	}
}
