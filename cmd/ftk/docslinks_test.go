package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every relative link of README.md and docs/*.md names a file of the
// repository, and so does every `path` in backquotes that starts with one of
// its top-level folders: pages and files move, the docs must follow.
func TestDocsLinks(t *testing.T) {
	top := map[string]bool{}
	entries, err := os.ReadDir("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			top[e.Name()] = true
		}
	}
	code := regexp.MustCompile("`([a-z0-9_]+/[A-Za-z0-9_./-]*[A-Za-z0-9_])`")
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
		for _, m := range code.FindAllStringSubmatch(string(data), -1) {
			first, _, _ := strings.Cut(m[1], "/")
			if !top[first] || strings.ContainsAny(m[1], "*<>") {
				continue
			}
			if _, err := os.Stat(filepath.Join("../..", m[1])); err != nil {
				t.Errorf("%s names %s, which does not exist", strings.TrimPrefix(page, "../../"), m[1])
			}
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
