package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's search example runs verbatim and prints what the README
// shows; its plot is docs/search-pareto.png.
func TestREADMESearchExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	plot, err := os.ReadFile("../../docs/search-pareto.png")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "\n$ ftk search ")
	if i < 0 {
		t.Fatal("README has no '$ ftk search' example")
	}
	block := text[i+1:]
	block = block[:strings.Index(block, "```")]
	cmdLine, want, _ := strings.Cut(block, "\n")
	t.Chdir(t.TempDir())
	out, errOut, code := ftk(t, strings.Fields(strings.TrimPrefix(cmdLine, "$ ftk "))...)
	if code != 0 {
		t.Fatalf("%s: exit %d: %s", cmdLine, code, errOut)
	}
	if out != want {
		t.Errorf("the README's search example now prints (update README.md):\n%s\nREADME shows:\n%s", out, want)
	}
	got, err := os.ReadFile(filepath.Join("search-out", "pareto.png"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(plot) {
		t.Errorf("the example's pareto.png differs from docs/search-pareto.png: copy search-out/pareto.png there")
	}
}
