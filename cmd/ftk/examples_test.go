package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/urfave/cli/v3"
)

// example is one command line the README or a --help text shows.
type example struct {
	where string // README.md:LINE or 'ftk CMD --help'
	line  string // the command line, verbatim (continuation lines joined by the shell)
	fails bool   // the README shows it failing (its output starts with "ftk: ")
	// shown is the output the README shows under the command (up to the
	// next "$ " line or the block's end): its stdout, or its stderr when it
	// fails. Lines [outFrom, outTo) of README.md hold it.
	shown          string
	outFrom, outTo int
}

// readmeExamples are the "$ ftk ..." lines of README.md's code blocks, with
// their continuation lines.
func readmeExamples(t *testing.T) []example {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []example
	inBlock := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock || !strings.HasPrefix(l, "$ ftk ") {
			continue
		}
		e := example{where: fmt.Sprintf("README.md:%d", i+1), line: strings.TrimPrefix(l, "$ ")}
		for strings.HasSuffix(e.line, "\\") && i+1 < len(lines) {
			i++
			e.line += "\n" + lines[i]
		}
		e.fails = i+1 < len(lines) && strings.HasPrefix(lines[i+1], "ftk: ")
		e.outFrom = i + 1
		for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], "$ ") && !strings.HasPrefix(lines[i+1], "```") {
			i++
		}
		e.outTo = i + 1
		e.shown = strings.Join(lines[e.outFrom:e.outTo], "\n")
		out = append(out, e)
	}
	return out
}

// helpExamples are the "  ftk ..." lines under "Examples:" in the
// description of every command and subcommand.
func helpExamples(cmds []*cli.Command, path string) []example {
	var out []example
	for _, c := range cmds {
		name := path + " " + c.Name
		if _, ex, ok := strings.Cut(c.Description, "Examples:\n"); ok {
			lines := strings.Split(ex, "\n")
			for i := 0; i < len(lines); i++ {
				l := lines[i]
				if !strings.HasPrefix(l, "  ftk ") {
					if strings.TrimSpace(l) == "" {
						break
					}
					continue
				}
				e := example{where: "'" + name + " --help'", line: strings.TrimSpace(l)}
				for strings.HasSuffix(e.line, "\\") && i+1 < len(lines) {
					i++
					e.line += "\n" + lines[i]
				}
				out = append(out, e)
			}
		}
		out = append(out, helpExamples(c.Commands, name)...)
	}
	return out
}

// exampleNeeds is what an example needs before it runs in its folder, and
// how it exits when not 0. Every example runs verbatim; before only
// provides its inputs: earlier examples (verbatim too) or input files of
// the names the example uses, copied from testdata or the repository's
// test data ($REPO), or made by ftk. A README example shown failing (its
// output starts with "ftk: ") must exit non-zero without an entry.
type exampleNeeds struct {
	before []string
	exit   int
	why    string
}

const (
	ingestA800 = "ftk ingest testdata/profiles/frontier-a800-qwen3-30b-a3b -o runs/a800"
	fitA800    = "ftk fit runs/a800 -o runs/a800.bundle.arrow"
	shareGPT   = "cp $REPO/datasets/testdata/sharegpt_small.json "
	tokenizer  = "mkdir -p llama3 && cp $REPO/datasets/testdata/tokenizer_bytelevel.json "
)

// standIns are measured runs for the validate examples: testdata holds no
// vLLM measurements, so they are ftk's own simulations of the first n
// requests (0: all) of the Splitwise traces in other execution modes
// (eager, piecewise), in the measured per-request CSV format, as bench/ and
// measured/CONFIG__WORKLOAD__rREP.csv (and the conv ones here), with the
// simulations to compare (sim/CONFIG__WORKLOAD). The calibration examples
// get 100 requests: calibrating re-simulates every run many times.
func standIns(n int) string {
	return fmt.Sprintf(`for w in conv code; do for r in 1 2; do m=eager; [ $r = 2 ] && m=piecewise; `+
		`ftk simulate --model llama-3.1-8b --trace testdata/traces/splitwise_$w.csv --num-requests %d --execution-mode $m -o standin-$w-$r >/dev/null && `+
		`mkdir -p bench measured && cut -d, -f1-4,7-9,14 standin-$w-$r/requests.csv > bench/h100-tp1__${w}__r$r.csv || exit 1; done; `+
		`ftk simulate --model llama-3.1-8b --trace testdata/traces/splitwise_$w.csv --num-requests %d -o sim/h100-tp1__$w >/dev/null || exit 1; done; `+
		`cp bench/* measured/ && cp bench/h100-tp1__conv__r* .`, n, n)
}

var exampleSetup = map[string]exampleNeeds{
	// README
	"ftk validate e2e --measured measured/ --simulated sim/ -o report/": {before: []string{standIns(100)}},
	// --help
	"ftk ingest my.csv --device h100 --model llama-3.1-8b -o runs/mine": {
		before: []string{"cp testdata/profiles/vidur-h100/Llama-2-7b-hf/mlp.csv my.csv"}},
	"ftk ingest --summary runs/h800": {before: []string{"ftk ingest testdata/profiles/frontier-h800 -o runs/h800"}},
	"ftk fit runs/h800 -o runs/h800.bundle.arrow --model qwen3-30b-a3b-tiny --measurement KERNEL_ONLY --report": {
		before: []string{"ftk ingest testdata/profiles/frontier-h800 -o runs/h800"}},
	"ftk fit runs/h800 -o runs/h800.bundle.arrow --check-coverage --model qwen3-30b-a3b-tiny \\\n      --tp 1 --max-num-batched-tokens 4096 --max-num-seqs 64 --max-model-len 4096": {exit: 3,
		why: "the tiny H800 profiles do not reach 4096 tokens: a coverage gap, exit 3, is what the example shows"},
	"ftk fit --bundle testdata/aiconfigurator/h100_sxm --check-coverage --model qwen3-30b-a3b --tp 2 --vllm-version 0.14.0": {exit: 3,
		why: "the kernel tables hold no norms, rotary embedding or top-k routing (the built-in device model prices them) and stop below the LM head's width: exit 3 lists them"},
	"ftk fit --bundle runs/a800.bundle.arrow --check-coverage --tp 8 --ep 8": {exit: 3,
		why: "the a800 profiles lack shapes TP8/EP8 asks for: a coverage gap, exit 3"},
	"ftk validate e2e --measured bench/ --simulated sim/ -o report": {before: []string{standIns(0)}},
	"ftk validate e2e --manifest runs.yaml --metrics ttft_p99_ms,tpot_mean_ms --format csv": {
		before: []string{`printf 'runs:\n  - {path: bench/h100-tp1__conv__r1.csv, side: measured, config: h100-tp1, workload: conv, repetition: 1}\n  - {path: sim/h100-tp1__conv, side: simulated, config: h100-tp1, workload: conv}\n' > runs.yaml`}},
	"ftk validate calibrate --measured bench/ --simulated sim/ -o calibration.yaml": {before: []string{standIns(100)}},
	"ftk validate ops bundle.arrow profiles-ds/": {before: []string{
		"ftk ingest testdata/profiles/frontier-h800/Qwen3-30B-A3B-tiny -o profiles-ds", "ftk fit profiles-ds -o bundle.arrow"}},
	"ftk datasets import sharegpt ShareGPT_V3.json -o sharegpt.csv --tokenizer tokenizer.json": {
		before: []string{shareGPT + "ShareGPT_V3.json", tokenizer + "tokenizer.json"}},
	"ftk datasets import mooncake datasets/testdata/mooncake_small.jsonl -o mooncake.csv": {
		before: []string{"mkdir -p datasets/testdata && cp $REPO/datasets/testdata/mooncake_small.jsonl datasets/testdata/"}},
	"ftk datasets make trace:run1.csv --rate 2 -o run1-2rps.csv     # a trace with times: rescaled": {
		before: []string{"ftk datasets make fixed:512x64 --rate 5 -n 200 -o run1.csv"}},
	"ftk datasets import sharegpt ShareGPT_V3_unfiltered_cleaned_split.json -o sharegpt.csv": {
		before: []string{shareGPT + "ShareGPT_V3_unfiltered_cleaned_split.json"}},
	"ftk datasets import sharegpt sg.json --tokenizer llama3/tokenizer.json --first-turn -o sg.csv": {
		before: []string{shareGPT + "sg.json", tokenizer + "llama3/tokenizer.json"}},
	"ftk datasets export fixed.csv --format vllm-bench -o fixed.jsonl": {
		before: []string{"ftk datasets make fixed:1024x256 --rate 4 -n 1000 -o fixed.csv"}},
	"ftk datasets export conv.csv --format vllm-bench --tokenizer tokenizer.json -o conv.jsonl": {
		before: []string{"ftk datasets make splitwise-conv -n 300 -o conv.csv", tokenizer + "tokenizer.json"}},
}

// Every example of the README and of every --help runs verbatim, through
// bash, as its own process (the test binary as ftk), in a temporary folder
// per source (README, each command's help) with testdata beside it (the
// built-in workloads read the traces embedded in the binary), in order, and exits as shown: 0, non-zero where the README shows "ftk: ..."
// after it, or the code exampleSetup gives with its reason.
func TestEveryExampleRuns(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shared, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(root, "testdata")); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", runAsFTK, exe)
	if err := os.WriteFile(filepath.Join(bin, "ftk"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	examples := append(readmeExamples(t), helpExamples(newApp(nil, nil).Commands, "ftk")...)
	used := map[string]bool{}
	var sources []string
	bySource := map[string][]example{}
	for _, e := range examples {
		src := e.where
		if strings.HasPrefix(src, "README") {
			src = "README"
		}
		if bySource[src] == nil {
			sources = append(sources, src)
		}
		bySource[src] = append(bySource[src], e)
		used[e.line] = true
	}
	for line := range exampleSetup {
		if !used[line] {
			t.Errorf("exampleSetup names an example no README or --help shows any more: %q", line)
		}
	}
	// The temporary folders are no checkout: the built-in workloads read
	// the traces the binary embeds.
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "REPO="+repo)
	// shell runs line in dir: its stdout, its stderr and its exit code.
	shell := func(dir, line string) (string, string, int) {
		cmd := exec.Command("bash", "-c", "set -o pipefail; "+line)
		var stdout, stderr strings.Builder
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &stdout, &stderr
		err := cmd.Run()
		if err == nil {
			return stdout.String(), stderr.String(), 0
		}
		if ee, ok := err.(*exec.ExitError); ok {
			return stdout.String(), stderr.String(), ee.ExitCode()
		}
		return stdout.String(), stderr.String() + err.Error(), -1
	}
	// With FTK_UPDATE_DOCS=1 the README's shown outputs are rewritten with
	// what the examples print (make docs), once every example has run.
	update := os.Getenv("FTK_UPDATE_DOCS") == "1"
	var mu sync.Mutex
	var outputs []example
	t.Cleanup(func() {
		// Only what examples that exited as shown printed is written; a
		// failing --help example elsewhere does not keep the README stale.
		if update && len(outputs) > 0 {
			if err := rewriteShown("../../README.md", outputs); err != nil {
				t.Error(err)
			}
		}
	})
	for i, src := range sources {
		t.Run(strings.Trim(src, "'"), func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, fmt.Sprintf("work%d", i))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			// Examples run as from the checkout's root: testdata/ is there.
			if err := os.Symlink(shared, filepath.Join(dir, "testdata")); err != nil {
				t.Fatal(err)
			}
			for _, e := range bySource[src] {
				need := exampleSetup[e.line]
				for _, b := range need.before {
					if stdout, stderr, code := shell(dir, b); code != 0 {
						t.Fatalf("%s: setup %q: exit %d\n%s%s", e.where, b, code, stdout, stderr)
					}
				}
				start := time.Now()
				stdout, stderr, code := shell(dir, e.line)
				want := need.exit
				switch {
				case e.fails && code == 0:
					t.Errorf("%s: %s\nexits 0; the README shows it failing", e.where, e.line)
				case !e.fails && code != want:
					t.Errorf("%s: %s\nexit %d, want %d:\n%s", e.where, e.line, code, want, tail(stdout+stderr, 1500))
				}
				// What the README shows under an example is what it prints:
				// its stdout, or its stderr when it fails.
				got := stdout
				if e.fails {
					got = stderr
				}
				got = trimLines(got)
				switch {
				case e.shown == "":
				case update && (e.fails == (code != 0)) && (e.fails || code == want):
					mu.Lock()
					e.shown = got
					outputs = append(outputs, e)
					mu.Unlock()
				case got != trimLines(e.shown):
					t.Errorf("%s: %s\nprints (make docs updates README.md):\n%s\nREADME shows:\n%s", e.where, e.line, got, e.shown)
				}
				t.Logf("%s: %.1fs: %s", e.where, time.Since(start).Seconds(), strings.SplitN(e.line, "\n", 2)[0])
			}
		})
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// trimLines is s without trailing spaces on its lines and without trailing
// newlines: how the README shows an output.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// rewriteShown writes each example's shown output into path, over the
// lines [outFrom, outTo) it was read from.
func rewriteShown(path string, examples []example) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	slices.SortFunc(examples, func(a, b example) int { return b.outFrom - a.outFrom })
	for _, e := range examples {
		lines = slices.Concat(lines[:e.outFrom], strings.Split(e.shown, "\n"), lines[e.outTo:])
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}
