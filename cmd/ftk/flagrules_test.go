package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

// TestCountsBelowOneRejected: a parallel degree, a tree or fold count of 0
// is a usage error naming the flag, not silently 1 or a default.
func TestCountsBelowOneRejected(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:10x10", "--num-requests", "2", "--tp", "0"},
		{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:10x10", "--num-requests", "2", "--dp", "0"},
		{"simulate", "--model", "llama-3.1-8b", "--workload", "fixed:10x10", "--num-requests", "2", "--mode", "disaggregated", "--decode-instances", "0"},
		{"fit", "x", "-o", "y", "--trees", "0"},
		{"fit", "x", "-o", "y", "--folds", "0"},
		{"collect", "linear", "--model", "llama-3.1-8b", "--tp", "1,0", "--plan-only"},
		{"models", "show", "llama-3.1-8b", "--dp", "-2"},
	} {
		_, errOut, code := ftk(t, args...)
		flag := ""
		for i, a := range args[:len(args)-1] {
			if v := args[i+1]; strings.HasPrefix(a, "--") && (v == "0" || strings.HasSuffix(v, ",0") || v == "-2") {
				flag = a
			}
		}
		if code != exitUsage || !strings.Contains(errOut, "for "+flag+": want 1 or more") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// TestFlagVocabulary walks every command: -o/--output on each that writes
// (no --out), one --seed default, no flag showing two defaults, and no
// internal identifier in any help text.
func TestFlagVocabulary(t *testing.T) {
	app := newApp(nil, nil)
	setUsageErrors(app)
	identifier := regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*|\b[a-z]+[A-Z]\w*`)
	var walk func(c *cli.Command, path string)
	walk = func(c *cli.Command, path string) {
		for _, f := range c.Flags {
			names := f.Names()
			switch names[0] {
			case "out":
				t.Errorf("%s: --out; the output flag is -o/--output everywhere", path)
			case "output":
				if len(names) < 2 || names[1] != "o" {
					t.Errorf("%s: --output without -o (%v)", path, names)
				}
			case "seed":
				if v := f.(*cli.Uint64Flag).Value; v != spec.DefaultSeed {
					t.Errorf("%s: --seed default %d, every command's is %d", path, v, spec.DefaultSeed)
				}
			}
			if df, ok := f.(cli.DocGenerationFlag); ok {
				usage := df.GetUsage()
				if hideOwnDefault(new(bool), usage); strings.Contains(usage, "(default") && df.IsDefaultVisible() {
					t.Errorf("%s --%s shows two defaults: %q and the library's", path, names[0], usage)
				}
				for _, m := range identifier.FindAllString(usage, -1) {
					if m != "vLLM" && m != "arXiv" {
						t.Errorf("%s --%s: internal name %q in %q", path, names[0], m, usage)
					}
				}
			}
		}
		for _, m := range identifier.FindAllString(c.Description+c.Usage, -1) {
			if m != "vLLM" && m != "arXiv" {
				t.Errorf("%s: internal name %q in the help text", path, m)
			}
		}
		for _, s := range c.Commands {
			walk(s, path+" "+s.Name)
		}
	}
	walk(app, "ftk")
	for _, w := range []string{"collect", "ingest", "fit", "simulate", "validate e2e", "validate calibrate", "datasets make", "datasets export", "datasets import sharegpt"} {
		c := app
		for _, n := range strings.Fields(w) {
			c = c.Command(n)
		}
		found := false
		for _, f := range c.Flags {
			found = found || f.Names()[0] == "output"
		}
		if !found {
			t.Errorf("ftk %s writes but has no -o/--output", w)
		}
	}
}
