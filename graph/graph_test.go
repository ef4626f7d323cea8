package graph

import (
	"go/build"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ftk-dev/ftk/"

// stages are the packages of the pipeline's stages: they exchange files,
// never imports.
var stages = []string{"collect", "ingest", "fit", "simulate", "datasets", "validate"}

// root is the module's root folder.
func root(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test file")
	}
	return filepath.Dir(filepath.Dir(file))
}

// imports returns the module-internal and external imports of the package
// in dir (not its tests).
func imports(t *testing.T, dir string) []string {
	t.Helper()
	p, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return p.Imports
}

// deps returns every package pkg (a module-relative folder) depends on,
// transitively, within the module and one level outside it.
func deps(t *testing.T, rootDir, pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(rel string) {
		for _, imp := range imports(t, filepath.Join(rootDir, rel)) {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if r, ok := strings.CutPrefix(imp, module); ok {
				walk(r)
			}
		}
	}
	walk(pkg)
	return seen
}

// No stage package imports another stage package.
func TestNoStageImportsAStage(t *testing.T) {
	r := root(t)
	for _, s := range stages {
		for _, imp := range imports(t, filepath.Join(r, s)) {
			if other, ok := strings.CutPrefix(imp, module); ok && other != s && slices.Contains(stages, other) {
				t.Errorf("stage %s imports stage %s: exchange a file through an artifact package instead", s, other)
			}
		}
	}
}

// listDeps is "go list -deps pkg": every package pkg links, transitively.
func listDeps(t *testing.T, dir, pkg string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "./"+pkg)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./%s: %v", pkg, err)
	}
	deps := map[string]bool{}
	for _, l := range strings.Fields(string(out)) {
		deps[l] = true
	}
	return deps
}

// simulate and validate link no stage and not fit's trainer: they read
// bundles, datasets and run results through the artifact packages. The
// simulator links no linear algebra at all (gonum/mat came with the
// trainer); validate's calibration uses gonum/optimize, its own need.
func TestSimulateAndValidateDeps(t *testing.T) {
	r := root(t)
	for _, tc := range []struct {
		pkg    string
		banned []string
	}{
		{"simulate", []string{"gonum.org/v1/gonum/mat", "gonum.org/v1/gonum/optimize"}},
		{"validate", nil},
	} {
		d := listDeps(t, r, tc.pkg)
		if !d[module+tc.pkg] {
			t.Fatalf("go list -deps ./%s does not list the package itself: %v", tc.pkg, d)
		}
		for _, s := range stages {
			if s != tc.pkg && d[module+s] {
				t.Errorf("%s depends on stage %s", tc.pkg, s)
			}
		}
		for _, b := range tc.banned {
			if d[b] {
				t.Errorf("%s depends on %s", tc.pkg, b)
			}
		}
	}
}

// The artifact and vocabulary packages sit below every stage: none of them
// imports a stage or cmd.
func TestArtifactsBelowStages(t *testing.T) {
	r := root(t)
	for _, pkg := range []string{"spec", "atomicfile", "profilecsv", "dataset", "bundle", "runresult", "cost", "kerneldb", "publicrun", "roofline"} {
		for imp := range deps(t, r, pkg) {
			rel, ok := strings.CutPrefix(imp, module)
			if ok && (slices.Contains(stages, rel) || strings.HasPrefix(rel, "cmd/")) {
				t.Errorf("%s depends on %s", pkg, rel)
			}
		}
	}
}

// costModel is the built-in device cost model's package.
const costModel = module + "roofline"

// The packages that read and write profiles and bundles never link the
// device cost model: what they hold is measured or fitted, never priced.
// spec, below every package, is vocabulary only; roofline itself is built
// on spec alone.
func TestCostModelNotLinked(t *testing.T) {
	r := root(t)
	for _, pkg := range []string{"spec", "profilecsv", "ingest", "fit", "dataset", "bundle", "runresult"} {
		d := listDeps(t, r, pkg)
		if !d[module+pkg] {
			t.Fatalf("go list -deps ./%s does not list the package itself: %v", pkg, d)
		}
		if d[costModel] {
			t.Errorf("%s links the device cost model (%s): take what it needs from spec, or move the code that prices to cost", pkg, costModel)
		}
	}
	for imp := range deps(t, r, "roofline") {
		if rel, ok := strings.CutPrefix(imp, module); ok && rel != "spec" {
			t.Errorf("roofline imports %s: it is built on spec alone", rel)
		}
	}
}
