package main

import (
	"os"
	"path/filepath"
	"regexp"
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
	want := map[string]int{"max-num-batched-tokens": spec.DefaultMaxNumBatchedTokens, "max-num-seqs": spec.DefaultMaxNumSeqs, "max-model-len": 0}
	makeName := map[string]string{"max-num-batched-tokens": "MAX_BATCHED_TOKENS", "max-num-seqs": "MAX_SEQS", "max-model-len": "MAX_MODEL_LEN"}
	for _, cmd := range []*cli.Command{collectCommand(), fitCommand(), simulateCommand()} {
		for flag, w := range want {
			if got := intFlagDefault(t, cmd, flag); got != w {
				t.Errorf("%s --%s defaults to %d, spec's default is %d", cmd.Name, flag, got, w)
			}
		}
	}
	for flag, w := range want {
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
		if got := spec.ResolveMaxModelLen(m, tc.asked); got != tc.want {
			t.Errorf("%s asked %d: max_model_len %d, want %d", tc.model, tc.asked, got, tc.want)
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
