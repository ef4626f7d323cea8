package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"
)

// docsCommand is one "$ ftk ..." line of a docs/ page's code block.
type docsCommand struct {
	where string
	line  string
}

// docsCommands reads every "$ ftk ..." line (with its "\" continuations)
// inside the code blocks of docs/*.md.
func docsCommands(t *testing.T) []docsCommand {
	t.Helper()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("docs pages: %v (%d)", err, len(pages))
	}
	var out []docsCommand
	for _, p := range pages {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		inBlock := false
		for i := 0; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if strings.HasPrefix(l, "```") {
				inBlock = !inBlock
				continue
			}
			if !inBlock || !strings.HasPrefix(l, "$ ftk ") {
				continue
			}
			c := docsCommand{where: fmt.Sprintf("docs/%s:%d", filepath.Base(p), i+1), line: strings.TrimPrefix(l, "$ ")}
			for strings.HasSuffix(c.line, "\\") && i+1 < len(lines) {
				i++
				c.line = strings.TrimSuffix(c.line, "\\") + " " + strings.TrimSpace(lines[i])
			}
			out = append(out, c)
		}
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the simple
// lines docs show (quotes, no expansions), stopping at a redirection, a
// pipe, a command separator or a comment.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			if !inWord && strings.ContainsRune("><|&;#", r) {
				return words
			}
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// flagNames are every name and alias of a command's flags.
func flagNames(c *cli.Command) []string {
	var out []string
	for _, f := range c.Flags {
		out = append(out, f.Names()...)
	}
	return out
}

// TestDocsCommandsParse: every "$ ftk ..." line of docs/ names a command
// that exists and only flags that command (or ftk itself) defines, so a
// renamed or deleted flag cannot linger in a page. The README's and the
// help texts' examples are run whole by TestEveryExampleRuns; the docs
// pages show commands on inputs a reader brings (their own traces, GPUs),
// so they are checked against the command line's definition instead.
func TestDocsCommandsParse(t *testing.T) {
	app := newApp(nil, nil)
	cmds := docsCommands(t)
	if len(cmds) < 20 {
		t.Fatalf("found %d $ ftk lines in docs/: the reader lost them", len(cmds))
	}
	for _, dc := range cmds {
		words := shellWords(dc.line)
		cmd := app
		known := flagNames(app)
		for _, w := range words[1:] {
			if strings.HasPrefix(w, "-") {
				break
			}
			next := cmd.Command(w)
			if next == nil {
				break
			}
			cmd = next
			known = append(known, flagNames(cmd)...)
		}
		if cmd == app {
			t.Errorf("%s: %q names no ftk command", dc.where, dc.line)
			continue
		}
		if len(cmd.Commands) > 0 && cmd.Action == nil {
			t.Errorf("%s: %q stops at %q, which needs a subcommand", dc.where, dc.line, cmd.Name)
		}
		for _, w := range words[1:] {
			if w == "--" {
				break
			}
			if !strings.HasPrefix(w, "-") || len(w) < 2 || (w[1] >= '0' && w[1] <= '9') || w[1] == '.' {
				continue // an argument or a negative number
			}
			name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if name == "help" || name == "h" {
				continue
			}
			if !slices.Contains(known, name) {
				t.Errorf("%s: ftk %s has no flag --%s (in %q)", dc.where, cmd.Name, name, dc.line)
			}
		}
	}
}

// TestShellWords holds the splitting the docs check relies on.
func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`ftk simulate --model m -o out`, []string{"ftk", "simulate", "--model", "m", "-o", "out"}},
		{`ftk search --slo 'tpot_p95_ms=50' > x.txt`, []string{"ftk", "search", "--slo", "tpot_p95_ms=50"}},
		{`ftk simulate --stages "60s@5 60s@10"   # ramp`, []string{"ftk", "simulate", "--stages", "60s@5 60s@10"}},
		{`ftk collect all | head`, []string{"ftk", "collect", "all"}},
	} {
		if got := shellWords(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("shellWords(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
