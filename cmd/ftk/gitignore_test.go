package main

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// TestDefaultOutputsIgnored: every default output folder of a command
// (simulate's sim-out, collect's profiles, search's search-out) and the
// locks beside outputs are in .gitignore, so running a command in the
// checkout leaves no modified or new tracked files (sim-out/ was
// committed, and a README command rewrote 4 tracked files).
func TestDefaultOutputsIgnored(t *testing.T) {
	data, err := os.ReadFile("../../.gitignore")
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		ignored[strings.TrimSpace(l)] = true
	}
	if !ignored[".*.ftk-lock"] {
		t.Error(".gitignore lacks the output locks (.*.ftk-lock)")
	}
	var walk func(*cli.Command)
	n := 0
	walk = func(c *cli.Command) {
		for _, f := range c.Flags {
			if s, ok := f.(*cli.StringFlag); ok && s.Name == "output" && s.Value != "" {
				n++
				if !ignored["/"+s.Value+"/"] {
					t.Errorf("%s --output defaults to %s, which .gitignore does not name (/%s/)", c.Name, s.Value, s.Value)
				}
			}
		}
		for _, sub := range c.Commands {
			walk(sub)
		}
	}
	walk(newApp(io.Discard, io.Discard))
	if n < 3 {
		t.Errorf("found %d default output folders, want simulate's, collect's and search's", n)
	}
}
