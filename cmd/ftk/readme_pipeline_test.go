package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pipelineMarker is the comment above the README block that shows what
// make pipeline's last step prints.
const pipelineMarker = "<!-- generated: make docs runs make pipeline's simulate step; TestREADMEPipelineOutput checks it -->"

// pipelineCommands are the ftk command lines make pipeline runs (make -n,
// with the binary named ftk and the run folder run), in order.
func pipelineCommands(t *testing.T) []string {
	t.Helper()
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed: the README's pipeline output is checked where make runs (make test)")
	}
	cmd := exec.Command(mk, "-n", "-s", "pipeline", "BIN=ftk", "RUN=run")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make -n pipeline: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(string(out), "\\\n", " "), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "ftk ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("make -n pipeline runs %d ftk commands, want collect, ingest, fit and simulate:\n%s", len(lines), out)
	}
	return lines
}

// The README shows what make pipeline's simulate step prints: the pipeline
// is deterministic, so the block is that output, byte for byte (trailing
// spaces aside). With FTK_UPDATE_DOCS=1 (make docs) the test writes it.
func TestREADMEPipelineOutput(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, pipelineMarker+"\n```\n")
	if i < 0 {
		t.Fatalf("README.md has no code block under %q", pipelineMarker)
	}
	from := i + len(pipelineMarker) + len("\n```\n")
	to := from + strings.Index(text[from:], "```")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", runAsFTK, exe)
	if err := os.WriteFile(filepath.Join(bin, "ftk"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	var stdout string
	for _, line := range pipelineCommands(t) {
		cmd := exec.Command("bash", "-c", line)
		var o, e strings.Builder
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &o, &e
		cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, tail(o.String()+e.String(), 1500))
		}
		stdout = o.String()
	}
	got := trimLines(stdout)
	// The README says in one line which execution mode the pipeline
	// simulates: the mode its output reports.
	mode := regexp.MustCompile(`(?m)^execution +([a-z-]+),`).FindStringSubmatch(got)
	said := regexp.MustCompile(`It simulates \*\*([A-Za-z-]+)\*\* mode`).FindStringSubmatch(text)
	switch {
	case mode == nil:
		t.Errorf("make pipeline's simulate step prints no execution line:\n%s", got)
	case said == nil:
		t.Errorf("README.md does not say which execution mode make pipeline simulates (\"It simulates **MODE** mode\")")
	case !strings.EqualFold(said[1], mode[1]):
		t.Errorf("README.md says make pipeline simulates %s mode; its output says %s", said[1], mode[1])
	}
	if os.Getenv("FTK_UPDATE_DOCS") == "1" {
		if err := os.WriteFile("../../README.md", []byte(text[:from]+got+"\n"+text[to:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := trimLines(text[from:to]); got != want {
		t.Errorf("make pipeline's simulate step prints (make docs updates README.md):\n%s\nREADME shows:\n%s", got, want)
	}
}
