package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

// intFlagDefault returns the default of the int flag name of cmd.
func intFlagDefault(t *testing.T, cmd *cli.Command, name string) int {
	t.Helper()
	for _, f := range cmd.Flags {
		if i, ok := f.(*cli.IntFlag); ok && i.Name == name {
			return i.Value
		}
	}
	t.Fatalf("%s has no flag --%s", cmd.Name, name)
	return 0
}

// collect, fit --check-coverage, simulate and the Makefile share one set
// of engine limits (spec's defaults), so what is profiled is what coverage
// checks is what simulate serves: with the defaults, simulate never
// rejects a request that the coverage check covered.
func TestEngineLimitDefaultsShared(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	makeVar := func(name string) int {
		m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(\d+)$`).FindSubmatch(mk)
		if m == nil {
			t.Fatalf("Makefile sets no %s", name)
		}
		v, _ := strconv.Atoi(string(m[1]))
		return v
	}
	want := map[string]int{"max-num-batched-tokens": spec.DefaultMaxNumBatchedTokens, "max-num-seqs": spec.DefaultMaxNumSeqs, "max-model-len": 0, "block-size": spec.DefaultBlockSize}
	makeName := map[string]string{"max-num-batched-tokens": "MAX_BATCHED_TOKENS", "max-num-seqs": "MAX_SEQS", "max-model-len": "MAX_MODEL_LEN"}
	for _, cmd := range []*cli.Command{collectCommand(), fitCommand(), simulateCommand()} {
		for flag, w := range want {
			if got := intFlagDefault(t, cmd, flag); got != w {
				t.Errorf("%s --%s defaults to %d, spec's default is %d", cmd.Name, flag, got, w)
			}
		}
	}
	for flag, w := range want {
		if makeName[flag] == "" {
			continue // the Makefile leaves the block size to the default
		}
		if got := makeVar(makeName[flag]); got != w {
			t.Errorf("Makefile %s = %d, spec's default is %d", makeName[flag], got, w)
		}
	}
	for _, tc := range []struct {
		model       string
		asked, want int
	}{
		{"llama-3.1-8b", 0, spec.DefaultMaxModelLen}, // 131072 positions: capped
		{"llama-2-7b", 0, 4096},                      // fewer positions than the cap
		{"llama-3.1-8b", 2048, 2048},
	} {
		m, err := spec.LookupModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		lim := spec.DefaultEngineLimits()
		lim.MaxModelLen = tc.asked
		got, err := lim.Resolve(m)
		if err != nil || got.MaxModelLen != tc.want {
			t.Errorf("%s asked %d: max_model_len %d (%v), want %d", tc.model, tc.asked, got.MaxModelLen, err, tc.want)
		}
	}
}

// TestMaxModelLenBeyondModel: a --max-model-len beyond the model's
// positions is refused by collect and fit --check-coverage (before the
// fit) as by simulate, a usage error naming the model's maximum, instead
// of profiling or checking lengths the model cannot serve.
func TestMaxModelLenBeyondModel(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	if _, errOut, code := ftk(t, "ingest", filepath.Join("..", "..", "testdata", "profiles", "vidur-h100"), "-o", ds); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}
	want := "max_model_len 100000 exceeds the 4096 positions of llama-2-7b"
	for _, args := range [][]string{
		{"collect", "linear", "--model", "llama-2-7b", "--device", "h100", "--max-model-len", "100000", "--plan-only"},
		{"fit", ds, "-o", filepath.Join(dir, "b.arrow"), "--check-coverage", "--model", "llama-2-7b", "--max-model-len", "100000"},
		{"simulate", "--model", "llama-2-7b", "--max-model-len", "100000", "--workload", "fixed:8x8", "--rate", "1", "--num-requests", "2", "-o", filepath.Join(dir, "sim")},
	} {
		_, errOut, code := ftk(t, args...)
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", args[0], code, errOut, exitUsage, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b.arrow")); err == nil {
		t.Error("fit wrote a bundle before refusing the limit")
	}
	// At the model's maximum every command accepts it.
	if _, errOut, code := ftk(t, "collect", "linear", "--model", "llama-2-7b", "--device", "h100", "--max-model-len", "4096", "--plan-only"); code != 0 {
		t.Errorf("collect at 4096: exit %d: %s", code, errOut)
	}
}

// TestEngineLimitsOneRule: collect, fit --check-coverage and simulate apply
// one rule set (spec.EngineLimits.Validate and Resolve) to the same flags,
// so a sweep collect plans is one simulate serves. Before, collect planned
// --max-num-batched-tokens 64 --max-num-seqs 256 (a budget below the
// sequence cap) that simulate then refused, and fit took a max-model-len
// of 1 that collect refused.
func TestEngineLimitsOneRule(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	if _, errOut, code := ftk(t, "ingest", filepath.Join("..", "..", "testdata", "profiles", "vidur-h100"), "-o", ds); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}
	for _, tc := range []struct {
		limits []string
		want   string
	}{
		{[]string{"--max-num-batched-tokens", "64", "--max-num-seqs", "256"}, "max_num_batched_tokens (64) must be at least max_num_seqs (256)"},
		{[]string{"--max-model-len", "1"}, "max_model_len must be 0"},
	} {
		for _, args := range [][]string{
			{"collect", "linear", "--model", "llama-2-7b", "--device", "h100", "--plan-only"},
			{"fit", ds, "-o", filepath.Join(dir, "b.arrow"), "--check-coverage", "--model", "llama-2-7b"},
			{"simulate", "--model", "llama-2-7b", "--workload", "fixed:8x8", "--rate", "1", "--num-requests", "2", "-o", filepath.Join(dir, "sim")},
		} {
			_, errOut, code := ftk(t, append(args, tc.limits...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("%s %v: exit %d, stderr %q; want exit %d and %q", args[0], tc.limits, code, errOut, exitUsage, tc.want)
			}
		}
	}
	// The limit flags are declared once: the same names, defaults and
	// words (fit's prefixed "coverage: ") in every command.
	usage := map[string]string{}
	for _, cmd := range []*cli.Command{collectCommand(), fitCommand(), simulateCommand()} {
		for _, f := range cmd.Flags {
			i, ok := f.(*cli.IntFlag)
			if !ok || !strings.HasPrefix(i.Name, "max-num") && i.Name != "max-model-len" && i.Name != "block-size" {
				continue
			}
			u := strings.TrimPrefix(i.Usage, "coverage: ")
			if prev, seen := usage[i.Name]; seen && prev != u {
				t.Errorf("%s --%s says %q, another command %q", cmd.Name, i.Name, u, prev)
			}
			usage[i.Name] = u
		}
	}
	if len(usage) != 4 {
		t.Errorf("limit flags %v, want the four of spec.EngineLimits", usage)
	}
}

// TestCollectRecordsBlockSize: collect's --block-size is the page size of
// its attention shapes, written into every attention row and into
// ftk-collect.yaml (a constant 16 was written before, whatever the flag).
func TestCollectRecordsBlockSize(t *testing.T) {
	dir := t.TempDir()
	if _, errOut, code := ftk(t, "collect", "attention", "--backend", "synthetic", "--model", "llama-2-7b", "--device", "h100",
		"--max-num-batched-tokens", "256", "--max-num-seqs", "8", "--max-model-len", "512", "--block-size", "32", "--repeats", "1", "--warmup", "0", "-o", dir); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, errOut)
	}
	sweep := filepath.Join(dir, "h100", "llama-2-7b")
	meta, err := os.ReadFile(filepath.Join(sweep, "ftk-collect.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^\s+block_size: 32$`).Match(meta) {
		t.Errorf("ftk-collect.yaml records no block_size 32:\n%s", meta)
	}
	rows, err := os.ReadFile(filepath.Join(sweep, "attention.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(rows)), "\n")
	col := slices.Index(strings.Split(lines[0], ","), "block_size")
	if col < 0 || len(lines) < 2 {
		t.Fatalf("attention.csv: no block_size column or no rows")
	}
	for i, l := range lines[1:] {
		if f := strings.Split(l, ","); len(f) <= col || f[col] != "32" {
			t.Fatalf("attention.csv line %d: block_size %q, want 32", i+2, f[col])
		}
	}
}

// TestLimitsRecordedAndCompared: the engine limits and block size a sweep
// is collected at travel into the dataset's manifest and the bundle's
// metadata, and simulate compares its own with them, naming both values.
func TestLimitsRecordedAndCompared(t *testing.T) {
	dir := t.TempDir()
	prof, ds, b := filepath.Join(dir, "prof"), filepath.Join(dir, "ds"), filepath.Join(dir, "b.arrow")
	if _, errOut, code := ftk(t, "collect", "attention", "--backend", "synthetic", "--model", "llama-2-7b", "--device", "h100",
		"--max-num-batched-tokens", "256", "--max-num-seqs", "8", "--max-model-len", "512", "--block-size", "32", "--repeats", "1", "--warmup", "0", "-o", prof); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, errOut)
	}
	if _, errOut, code := ftk(t, "ingest", prof, "-o", ds); code != 0 {
		t.Fatalf("ingest: exit %d: %s", code, errOut)
	}
	man, err := os.ReadFile(filepath.Join(ds, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"max_num_batched_tokens": 256`, `"max_model_len": 512`, `"block_sizes": [
    32
  ]`} {
		if !strings.Contains(string(man), w) {
			t.Errorf("manifest.json lacks %s", w)
		}
	}
	if _, errOut, code := ftk(t, "fit", ds, "-o", b, "--trees", "4", "--folds", "2"); code != 0 {
		t.Fatalf("fit: exit %d: %s", code, errOut)
	}
	sim := func(extra ...string) (string, string) {
		args := append([]string{"simulate", "--model", "llama-2-7b", "--bundle", b, "--workload", "fixed:64x16", "--rate", "2", "--num-requests", "8", "-o", filepath.Join(dir, "sim")}, extra...)
		out, errOut, code := ftk(t, args...)
		if code != 0 {
			t.Fatalf("simulate %v: exit %d: %s", extra, code, errOut)
		}
		return out, errOut
	}
	out, errOut := sim()
	for _, w := range []string{"max_num_batched_tokens 8192 is above the 256", "max_model_len 4096 is above the 512", "block_size 16 differs from the block size 32"} {
		if !strings.Contains(errOut, "simulate: warning: "+w) || !strings.Contains(out, w) {
			t.Errorf("simulate at the defaults: stderr and summary should say %q; stderr:\n%s", w, errOut)
		}
	}
	if _, errOut := sim("--max-num-batched-tokens", "256", "--max-num-seqs", "8", "--max-model-len", "512", "--block-size", "32"); strings.Contains(errOut, "warning") {
		t.Errorf("simulate at the profiled limits warns:\n%s", errOut)
	}
}
