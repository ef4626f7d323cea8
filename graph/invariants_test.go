package graph

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testStrings returns the string literals and the names of the functions
// and types of every _test.go file of the module.
func testStrings(t *testing.T, r string) (lits []string, funcs map[string]bool) {
	funcs = map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					lits = append(lits, n.Value)
				}
			case *ast.FuncDecl:
				funcs[n.Name.Name] = true
			case *ast.TypeSpec:
				funcs[n.Name.Name] = true
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lits, funcs
}

// Every invariant of docs/design.md's table (INV-n) is cited by a test:
// some test's failure message names it, so a failure says which
// invariant broke; and every test or benchmark the table names exists.
func TestEveryInvariantHasATest(t *testing.T) {
	r := root(t)
	doc, err := os.ReadFile(filepath.Join(r, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	lits, funcs := testStrings(t, r)
	row := regexp.MustCompile(`(?m)^\| (INV-\d+) [^|]*\|[^|]*\|([^\n]*)\|$`)
	named := regexp.MustCompile("`((?:[a-z]+\\.)?(?:Test|Benchmark)[A-Za-z0-9_]+|check[A-Za-z]+)`")
	rows := row.FindAllStringSubmatch(string(doc), -1)
	if len(rows) < 12 {
		t.Fatalf("docs/design.md: %d invariant rows, want INV-1..12 (the table's pattern no longer matches?)", len(rows))
	}
	for _, m := range rows {
		inv := m[1]
		cite := regexp.MustCompile(regexp.QuoteMeta(inv) + `\b`)
		cited := false
		for _, l := range lits {
			if cite.MatchString(l) {
				cited = true
				break
			}
		}
		if !cited {
			t.Errorf("%s of docs/design.md is cited by no test: name it (%q) in the failure messages of the tests that check it", inv, inv+": ")
		}
		for _, n := range named.FindAllStringSubmatch(m[2], -1) {
			name := n[1][strings.LastIndex(n[1], ".")+1:]
			if !funcs[name] {
				t.Errorf("%s: docs/design.md names %s, which no _test.go file defines", inv, n[1])
			}
		}
	}
}
