package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every relative link of README.md and docs/*.md names a file of the
// repository: pages move, links must follow.
func TestDocsLinks(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			checked++
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", strings.TrimPrefix(page, "../../"), m[1])
			}
		}
	}
	if checked < 20 {
		t.Errorf("%d relative links checked: the link pattern no longer finds them", checked)
	}
}

// README.md is a user guide: at most 300 lines, and no dated entries
// (history lives in git; measured figures in generated pages).
func TestREADMEIsAGuide(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 300 {
		t.Errorf("README.md has %d lines, want at most 300: move detail to a docs/ page", len(lines))
	}
	date := regexp.MustCompile(`\b20\d\d-\d\d-\d\d\b`)
	for i, l := range lines {
		if d := date.FindString(l); d != "" {
			t.Errorf("README.md:%d: dated entry %s: the README states what is; history lives in git", i+1, d)
		}
	}
}
