package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/datasets"
	"github.com/ftk-dev/ftk/runresult"
	"github.com/ftk-dev/ftk/search"
)

// datasetsShared is testdata seen from cmd/ftk.
const datasetsShared = "../../testdata"

// ftkDatasets runs "ftk datasets ARGS..." in-process and returns stdout,
// stderr and the exit code.
func ftkDatasets(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(datasetsShared, "traces")); err != nil {
		t.Fatalf("shared traces missing: %v", err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"ftk", "datasets"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

func datasetsFileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func TestDatasetsMake(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		args   []string
		rows   int
		header string
		stderr []string
	}{
		{"fixed poisson", []string{"make", "fixed:1024x256", "--rate", "4", "-n", "500"}, 500,
			"arrived_at,num_prefill_tokens,num_decode_tokens", []string{"rate 4 req/s", "500 requests of fixed:1024x256, arrivals poisson 4 req/s, seed 1"}},
		{"bursty gamma", []string{"make", "splitwise-conv", "--rate", "8", "--cv", "2", "-n", "300"}, 300,
			"arrived_at,num_prefill_tokens,num_decode_tokens", []string{"arrivals gamma 8 req/s CV 2"}},
		{"recorded replay", []string{"make", "splitwise-code"}, 8819,
			"arrived_at,num_prefill_tokens,num_decode_tokens", []string{"8819 requests of splitwise-code, arrivals replay"}},
		{"rescaled replay", []string{"make", "splitwise-code", "--rate", "2", "--arrivals", "replay", "-n", "100"}, 100,
			"arrived_at,num_prefill_tokens,num_decode_tokens", []string{"replay scaled to 2 req/s"}},
		{"trace with times and a rate", []string{"make", "trace:" + filepath.Join(datasetsShared, "traces", "splitwise_code.csv"), "--rate", "2", "-n", "100"}, 100,
			"arrived_at,num_prefill_tokens,num_decode_tokens", []string{"arrivals replay scaled to 2 req/s"}},
		{"load from pilot", []string{"make", "arxiv-summarization", "--load", "0.7", "--pilot-throughput", "3.2", "-n", "50"}, 50,
			"arrived_at,num_prefill_tokens,num_decode_tokens", []string{"rate 2.24 req/s = load 0.7 x pilot throughput 3.2 req/s"}},
		{"lengths only", []string{"make", "arxiv-summarization", "-n", "20"}, 20,
			"num_prefill_tokens,num_decode_tokens", []string{"arrivals none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".csv")
			args := append(append([]string{}, tc.args...), "-o", out)
			_, errOut, code := ftkDatasets(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			l := datasetsFileLines(t, out)
			if len(l) != tc.rows+1 || l[0] != tc.header {
				t.Errorf("%d lines, header %q; want %d rows and %q", len(l), l[0], tc.rows, tc.header)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
		})
	}
}

func TestDatasetsMakeIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, seed string) []byte {
		p := filepath.Join(dir, name)
		if _, errOut, code := ftkDatasets(t, "make", "splitwise-conv", "--arrivals", "gamma", "--rate", "5", "--cv", "3", "-n", "2000", "--seed", seed, "-o", p); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		b, _ := os.ReadFile(p)
		return b
	}
	a, b := mk("a.csv", "11"), mk("b.csv", "11")
	if !bytes.Equal(a, b) {
		t.Error("same seed, different bytes")
	}
	if bytes.Equal(a, mk("c.csv", "12")) {
		t.Error("different seeds, same bytes")
	}
}

func TestDatasetsShow(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"show", filepath.Join(datasetsShared, "traces", "splitwise_conv.csv")},
			[]string{"requests: 19366", "arrivals: 5.53 req/s over 3501.72 s, inter-arrival CV 1.094", "prompt  1154.7    2  1020.0  2734.5  4142.0  14050"}},
		{[]string{"show", "splitwise-code"},
			[]string{"recorded trace", "requests: 8819"}},
		{[]string{"show", "arxiv-summarization"},
			[]string{"requests: 28257", "arrivals: none recorded"}},
		{[]string{"show", "fixed:1024x256", "--rate", "4", "-n", "1000"},
			[]string{"requests: 1000", "prompt  1024.0  1024  1024.0  1024.0  1024.0  1024"}},
	} {
		out, errOut, code := ftkDatasets(t, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, want, out)
			}
		}
	}
}

// TestDatasetsBadInput checks that bad input exits non-zero with an error
// naming file, line and column (or the flag at fault).
func TestDatasetsBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("arrived_at,num_prefill_tokens,num_decode_tokens\n0,10,5\n1,10,0\n"), 0o644)
	unsorted := filepath.Join(dir, "unsorted.csv")
	os.WriteFile(unsorted, []byte("arrived_at,num_prefill_tokens,num_decode_tokens\r\n2,10,5\r\n1,10,5\r\n"), 0o644)
	badJSON := filepath.Join(dir, "sg.json")
	os.WriteFile(badJSON, []byte("[\n {\"id\": \"x\", \"conversations\": [{\"from\": \"human\", \"value\": 7}]}\n]\n"), 0o644)
	out := filepath.Join(dir, "out.csv")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"show bad trace", []string{"show", bad}, 1, bad + ":3:3: num_decode_tokens must be >= 1, got 0"},
		{"make from bad trace", []string{"make", "trace:" + bad, "-o", out}, 1, bad + ":3:3: num_decode_tokens must be >= 1"},
		{"export bad trace", []string{"export", unsorted, "-o", out}, 1, unsorted + ":3:1: arrived_at 1 is before the previous request's 2 (line 2)"},
		{"import bad json", []string{"import", "sharegpt", badJSON, "-o", out}, 1, badJSON + ":2:60: "},
		{"unsupported tokenizer", []string{"import", "sharegpt", filepath.Join("..", "..", "datasets", "testdata", "sharegpt_small.json"), "--tokenizer", filepath.Join("..", "..", "datasets", "testdata", "tokenizer_unigram.json"), "-o", out}, 1, "exact counts need a tokenizer.json with a BPE or WordLevel model"},
		{"missing trace file", []string{"show", filepath.Join(dir, "nope.csv")}, 1, "no such file"},
		{"unknown workload", []string{"make", "sharegpt", "-o", out}, 2, `datasets make: WORKLOAD "sharegpt": want fixed:PxO, splitwise-conv`},
		{"no output", []string{"make", "fixed:1x1", "--rate", "1"}, 2, "needs -o FILE"},
		{"load without capacity", []string{"make", "fixed:1x1", "--load", "0.7", "-o", out}, 2, "--load needs a capacity: pass --pilot-throughput RPS (completed requests/s of a saturated pilot run), or --model M"},
		{"pilot and model", []string{"make", "fixed:1x1", "--load", "0.7", "--pilot-throughput", "3", "--model", "llama-3.1-8b", "-o", out}, 2, "not both"},
		{"unknown model", []string{"make", "fixed:1x1", "--load", "0.7", "--model", "gpt-9", "-o", out}, 2, `invalid value "gpt-9" for --model: want a catalog model`},
		{"rate and load", []string{"make", "fixed:1x1", "--load", "0.7", "--rate", "3", "--pilot-throughput", "4", "-o", out}, 2, "give --rate or --load, not both"},
		{"gamma without cv", []string{"make", "fixed:1x1", "--arrivals", "gamma", "--rate", "3", "-o", out}, 2, "--arrivals gamma needs --cv"},
		{"poisson without rate", []string{"make", "fixed:1x1", "--arrivals", "poisson", "-o", out}, 2, "needs a rate > 0"},
		{"replay without times", []string{"make", "fixed:1x1", "--arrivals", "replay", "-o", out}, 1, "no recorded arrival times"},
		{"bad format", []string{"export", filepath.Join(datasetsShared, "traces", "splitwise_code.csv"), "--format", "parquet", "-o", out}, 2, `--format "parquet"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := ftkDatasets(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, tc.code, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed command left an output file")
	}
}

func TestDatasetsImportAndExport(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "sg.csv")
	fixture := filepath.Join("..", "..", "datasets", "testdata", "sharegpt_small.json")
	_, errOut, code := ftkDatasets(t, "import", "sharegpt", fixture, "-o", trace)
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "6 requests from 6 conversations (1 exchanges skipped") || !strings.Contains(errOut, "ESTIMATED") {
		t.Errorf("import stderr: %s", errOut)
	}
	convA := fmt.Sprintf("19,16,%d,2,estimated", datasets.ContentID([]byte("conv-a"))) // second turn of conv-a
	if l := datasetsFileLines(t, trace); l[0] != "num_prefill_tokens,num_decode_tokens,session_id,turn,token_counts" || l[2] != convA {
		t.Errorf("imported trace:\n%s", strings.Join(l, "\n"))
	}
	out, _, code := ftkDatasets(t, "show", trace)
	if code != 0 || !strings.Contains(out, "token counts: ESTIMATED") || !strings.Contains(out, "requests: 6") {
		t.Errorf("show imported trace (exit %d):\n%s", code, out)
	}
	_, errOut, code = ftkDatasets(t, "import", "sharegpt", fixture, "--first-turn", "--tokenizer", filepath.Join("..", "..", "datasets", "testdata", "tokenizer_wordlevel.json"), "-o", trace)
	if code != 0 || !strings.Contains(errOut, "5 requests from 6 conversations") || !strings.Contains(errOut, "token counts are exact") {
		t.Errorf("exact import (exit %d): %s", code, errOut)
	}

	// Give the imported trace arrivals, then export it.
	timed := filepath.Join(dir, "timed.csv")
	if _, errOut, code := ftkDatasets(t, "make", "trace:"+trace, "--rate", "2", "-o", timed); code != 0 {
		t.Fatalf("make trace: exit %d: %s", code, errOut)
	}
	jsonl := filepath.Join(dir, "timed.jsonl")
	_, errOut, code = ftkDatasets(t, "export", timed, "--format", "vllm-bench", "-o", jsonl)
	if code != 0 || !strings.Contains(errOut, "replay with: vllm bench serve --dataset-name custom --dataset-path "+jsonl) || !strings.Contains(errOut, "--num-prompts 5 --request-rate") {
		t.Fatalf("export vllm-bench (exit %d): %s", code, errOut)
	}
	f, _ := os.Open(jsonl)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var v struct {
			Prompt       string `json:"prompt"`
			OutputTokens int    `json:"output_tokens"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil || v.Prompt == "" || v.OutputTokens < 1 {
			t.Errorf("line %d: %s (%v)", n+1, sc.Text(), err)
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d JSONL lines, want 5", n)
	}
	mooncake := filepath.Join(dir, "timed.mooncake.jsonl")
	if _, errOut, code := ftkDatasets(t, "export", timed, "--format", "mooncake", "-o", mooncake); code != 0 {
		t.Fatalf("export mooncake: exit %d: %s", code, errOut)
	}
	if l := datasetsFileLines(t, mooncake); len(l) != 5 || !strings.HasPrefix(l[0], `{"timestamp": 0, "input_length": `) {
		t.Errorf("mooncake export:\n%s", strings.Join(l, "\n"))
	}
}

// TestDatasetsLoadFromSimulatedCapacity runs the simulated capacity search
// and checks that the printed rate is load x capacity, and that the
// capacity separates bounded from unbounded runs of the simulator.
func TestDatasetsLoadFromSimulatedCapacity(t *testing.T) {
	out := filepath.Join(t.TempDir(), "f.csv")
	_, errOut, code := ftkDatasets(t, "make", "fixed:1024x256", "--load", "0.7", "--model", "llama-3.1-8b", "--device", "h100", "--probe-requests", "1000", "-n", "100", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var capRPS, rate, load, capAgain float64
	for _, line := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(line, "capacity ") {
			fmt.Sscanf(line, "capacity %g req/s", &capRPS)
		}
		if strings.HasPrefix(line, "rate ") {
			fmt.Sscanf(line, "rate %g req/s = load %g x capacity %g req/s", &rate, &load, &capAgain)
		}
	}
	if !(capRPS > 0) || capAgain != capRPS || load != 0.7 || math.Abs(rate-0.7*capRPS) > 1e-3*rate {
		t.Fatalf("capacity %g, rate %g, load %g in:\n%s", capRPS, rate, load, errOut)
	}
	w, err := datasets.ParseWorkload("fixed:1024x256")
	if err != nil {
		t.Fatal(err)
	}
	cfg := runresult.DefaultConfig()
	cfg.Model, cfg.Device = "llama-3.1-8b", "h100"
	p := search.NewCapacityProbe(cfg, w, 1000, 1)
	for _, tc := range []struct {
		factor float64
		want   bool
	}{{0.8, true}, {1.25, false}} {
		got, err := p.Bounded(tc.factor * capRPS)
		if err != nil || got != tc.want {
			t.Errorf("Bounded(%g x capacity) = %v, %v; want %v", tc.factor, got, err, tc.want)
		}
	}
}
