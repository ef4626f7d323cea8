package main

import (
	"strings"
	"testing"
)

// TestExitCodes checks the documented exit codes: 2 for every command-line
// mistake (unknown command or flag, unparsable value), one line on stderr in
// ftk's words, and 3 for nothing but a coverage gap. A name outside its
// set (a device, model, router, execution mode) is a usage error like an
// unparsable number.
func TestExitCodes(t *testing.T) {
	t.Chdir(t.TempDir()) // a command that gets past its flags writes nothing here
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"bogus"}, exitUsage, `unknown command "bogus" for 'ftk'`},
		{[]string{"help", "bogus"}, exitUsage, `unknown command "bogus" for 'ftk'`},
		{[]string{"models", "bogus"}, exitUsage, `unknown command "bogus" for 'ftk models': the commands are list, show, ops`},
		{[]string{"datasets", "bogus"}, exitUsage, `unknown command "bogus" for 'ftk datasets'`},
		{[]string{"validate", "bogus"}, exitUsage, `unknown command "bogus" for 'ftk validate'`},
		{[]string{"datasets", "import", "bogus"}, exitUsage, `unknown command "bogus" for 'ftk datasets import'`},
		{[]string{"simulat", "--model", "x"}, exitUsage, `unknown command "simulat"`},
		{[]string{"simulate", "--bogus"}, exitUsage, "simulate: unknown flag --bogus (see 'ftk simulate --help')"},
		{[]string{"fit", "--bogus", "x"}, exitUsage, "fit: unknown flag --bogus"},
		{[]string{"validate", "e2e", "-z"}, exitUsage, "validate e2e: unknown flag -z"},
		{[]string{"simulate", "--tp", "x"}, exitUsage, `invalid value "x" for --tp: want a whole number`},
		{[]string{"simulate", "--rate", "fast"}, exitUsage, `invalid value "fast" for --rate: want a number`},
		{[]string{"simulate", "--seed", "-1"}, exitUsage, `invalid value "-1" for --seed: want a whole number >= 0`},
		{[]string{"fit", "--trees", "x"}, exitUsage, `invalid value "x" for --trees: want a whole number`},
		{[]string{"collect", "linear", "--shape-timeout", "x"}, exitUsage, "want a duration"},
		{[]string{"ingest", "-o"}, exitUsage, "ingest: -o needs a value"},
		{[]string{"ingest"}, exitUsage, "ingest needs at least one PATH"},
		{[]string{"devices", "show", "bogus"}, exitUsage, `unknown device "bogus"`},
		{[]string{"models", "show", "bogus"}, exitUsage, `unknown model "bogus"`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--device", "bogus", "--workload", "fixed:8x8"}, exitUsage, `invalid value "bogus" for --device: want a catalog device`},
		{[]string{"simulate", "--model", "bogus", "--workload", "fixed:8x8"}, exitUsage, `invalid value "bogus" for --model: want a catalog model`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--router", "bogus", "--workload", "fixed:8x8"}, exitUsage, `invalid value "bogus" for --router: want round-robin or least-loaded`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--execution-mode", "bogus", "--workload", "fixed:8x8"}, exitUsage, `for --execution-mode: want eager, cuda-graph, piecewise or full-and-piecewise`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--mode", "bogus", "--workload", "fixed:8x8"}, exitUsage, `for --mode: want colocated or disaggregated`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--kv-cache-dtype", "int3", "--workload", "fixed:8x8"}, exitUsage, `for --kv-cache-dtype: want auto`},
		{[]string{"simulate", "--model", "qwen3-30b-a3b", "--moe-routing", "bogus", "--workload", "fixed:8x8"}, exitUsage, `for --moe-routing: want skewed`},
		{[]string{"simulate", "--model", "qwen3-30b-a3b", "--all2all-backend", "bogus", "--workload", "fixed:8x8"}, exitUsage, `for --all2all-backend: want naive`},
		{[]string{"collect", "linear", "--model", "llama-3.1-8b", "--backend", "gpu"}, exitUsage, `for --backend: want auto, synthetic or torch`},
		{[]string{"collect", "linear", "--model", "bogus"}, exitUsage, `for --model: want a catalog model`},
		{[]string{"fit", "x", "-o", "y", "--model", "bogus"}, exitUsage, `fit: invalid value "bogus" for --model`},
		{[]string{"search", "--model", "bogus"}, exitUsage, `search: invalid value "bogus" for --model`},
		{[]string{"models", "ops", "llama-3.1-8b", "--device", "bogus"}, exitUsage, `for --device: want a catalog device`},
		{[]string{"datasets", "make", "fixed:8x8", "--device", "bogus", "-o", "x"}, exitUsage, `for --device: want a catalog device`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--workload", "bogus"}, exitUsage, `invalid value "bogus" for --workload: want fixed:PxO, splitwise-conv`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:10"}, exitUsage, `for --workload: want fixed:PxO with prompt and output tokens >= 1`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:8x8", "--stages", "5@x"}, exitUsage, `for --stages: want DURATIONs@RATE`},
		{[]string{"search", "--model", "llama-3.1-8b", "--workload", "bogus"}, exitUsage, `search: invalid value "bogus" for --workload`},
		{[]string{"fit", "x", "-o", "y", "--measurement", "wall"}, exitUsage, `for --measurement: want CUDA_EVENT, KERNEL_ONLY, HOST_WALL or CPU`},
		{[]string{"simulate", "--model", "llama-3.1-8b", "--workload", "trace:no/such.csv", "--num-requests", "1"}, exitRuntime, "no/such.csv"},
		{[]string{"collect", "linear", "--model", "llama-3.1-8b", "--device-kind", "tpu"}, exitUsage, `for --device-kind: want cuda or cpu`},
		{[]string{"collect", "linear", "--model", "llama-3.1-8b", "--emit", "pbs"}, exitUsage, `for --emit: want slurm or k8s`},
		{[]string{"fit", "x", "-o", "y", "--repeats", "mean"}, exitUsage, `for --repeats: want all or median`},
		{[]string{"validate", "calibrate", "--measured", "a", "--simulated", "b", "--params", "bogus", "-o", "c.yaml"}, exitUsage, `--params: unknown correction "bogus"`},
		{[]string{"simulate", "--model", "no/such/config.json", "--workload", "fixed:8x8", "--num-requests", "1"}, exitRuntime, "no/such/config.json"},
		{[]string{"models"}, exitOK, ""},
		{[]string{"version"}, exitOK, ""},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			out, errOut, code := ftk(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, c.code, errOut)
			}
			if c.code == exitOK {
				if out == "" {
					t.Errorf("no output")
				}
				return
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("stderr %q lacks %q", errOut, c.want)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
			for _, jargon := range []string{"ftk: ftk:", "No help topic", "strconv", "flag provided but not defined", "Incorrect Usage"} {
				if strings.Contains(errOut, jargon) {
					t.Errorf("stderr %q has %q", errOut, jargon)
				}
			}
		})
	}
}

// TestHelpWithArguments: --help after a command's arguments prints the
// command's help and exits 0 ("ftk collect all --help" answered "No help
// topic for 'all'" with exit 3, the coverage code).
func TestHelpWithArguments(t *testing.T) {
	for _, args := range [][]string{
		{"collect", "all", "--help"},
		{"collect", "linear", "attention", "-h"},
		{"collect", "--model", "llama-3.1-8b", "all", "--help"},
		{"models", "show", "llama-3.1-8b", "--help"},
		{"fit", "runs/dataset", "--help"},
	} {
		out, errOut, code := ftk(t, args...)
		if code != exitOK || !strings.Contains(out, "ftk "+args[0]) || !strings.Contains(out, "USAGE:") {
			t.Errorf("%v: exit %d, stderr %q, stdout starts %.80q; want exit 0 and the command's help", args, code, errOut, out)
		}
	}
}
