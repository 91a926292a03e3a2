package harness

import (
	"cmp"
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// harnessLayers ranks the harness's packages, bottom up (see README.md):
// a package may import only packages of a lower rank.
var harnessLayers = map[string]int{
	"runtimes":                           0,
	"history":                            1,
	"targets":                            2,
	"runtimes/containers":                3,
	"runtimes/containers/containerstest": 3,
	"matchers":                           3,
	".":                                  4, // the facade
}

// maxFacadeFiles bounds the facade: Env, Start and the wiring between the
// sub-packages, nothing that has a package of its own.
const maxFacadeFiles = 12

// TestPackageLayering: the harness's packages depend one way only,
// downwards (runtimes, history, targets, then containers and matchers, then
// the facade): none imports the facade or a package above it, every
// package has a rank, and the facade keeps at most maxFacadeFiles files.
func TestPackageLayering(t *testing.T) {
	const mod = "github.com/vmcp-chaos/vmcp-chaos/harness"
	err := filepath.WalkDir(".", func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if dir == "internal" || d.Name() == "testdata" || d.Name() == "templates" {
			return filepath.SkipDir // not importable from outside, or no Go
		}
		pkg, err := build.ImportDir(dir, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		} else if err != nil {
			return err
		}
		rank, ok := harnessLayers[dir]
		if !ok {
			t.Errorf("harness/%s has no rank in harnessLayers: give it one (and a line in README.md)", dir)
			return nil
		}
		for _, imp := range pkg.Imports {
			rest, ok := strings.CutPrefix(imp, mod)
			if !ok || (rest != "" && !strings.HasPrefix(rest, "/")) || strings.HasPrefix(rest, "/internal/") {
				continue
			}
			to := cmp.Or(strings.TrimPrefix(rest, "/"), ".")
			if r, known := harnessLayers[to]; !known || r >= rank {
				t.Errorf("harness/%s (rank %d) imports harness/%s (rank %d, known %v): packages import only downwards", dir, rank, to, r, known)
			}
		}
		if dir == "." && len(pkg.GoFiles) > maxFacadeFiles {
			t.Errorf("the facade has %d files %v, want at most %d: move what has a concern of its own into a sub-package", len(pkg.GoFiles), pkg.GoFiles, maxFacadeFiles)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// suiteLayers ranks the packages above the harness that write, run and
// hold the scenarios, bottom up (see scenarios/runner/README.md): the kit
// (how a scenario is written), the runner (how scenarios are run; it knows
// none in particular), the catalogue. Every harness package ranks 0.
var suiteLayers = map[string]int{
	"scenarios/kit":    1,
	"scenarios/runner": 2,
	"scenarios":        3,
}

// TestSuiteLayering: the harness imports nothing of the scenarios; the
// kit imports neither the runner nor the catalogue; the runner does not
// import the catalogue (it is handed the scenarios), and every package
// under scenarios/ has a rank. Test files count too: a runner test that
// needs a scenario writes its own.
func TestSuiteLayering(t *testing.T) {
	const mod = "github.com/vmcp-chaos/vmcp-chaos/"
	rankOf := func(imp string) (int, bool) {
		rest, ok := strings.CutPrefix(imp, mod)
		switch {
		case !ok:
			return 0, false
		case rest == "harness" || strings.HasPrefix(rest, "harness/"):
			return 0, true
		}
		r, ok := suiteLayers[rest]
		return r, ok
	}
	walk := func(root string, check func(dir string, pkg *build.Package)) {
		t.Helper()
		err := filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if d.Name() == "testdata" || d.Name() == "templates" {
				return filepath.SkipDir
			}
			pkg, err := build.ImportDir(dir, 0)
			if _, none := err.(*build.NoGoError); none {
				return nil
			} else if err != nil {
				return err
			}
			check(dir, pkg)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	imports := func(pkg *build.Package) []string {
		return slices.Concat(pkg.Imports, pkg.TestImports, pkg.XTestImports)
	}
	walk(".", func(dir string, pkg *build.Package) {
		for _, imp := range imports(pkg) {
			if r, ok := rankOf(imp); ok && r > 0 {
				t.Errorf("harness/%s imports %s: the harness imports nothing of the scenarios", dir, imp)
			}
		}
	})
	walk("../scenarios", func(dir string, pkg *build.Package) {
		name := filepath.ToSlash(strings.TrimPrefix(dir, "../"))
		rank, ok := suiteLayers[name]
		if !ok {
			t.Errorf("%s has no rank in suiteLayers: give it one (and a line in scenarios/runner/README.md)", name)
			return
		}
		for _, imp := range imports(pkg) {
			if r, known := rankOf(imp); known && r >= rank && imp != mod+name {
				t.Errorf("%s (rank %d) imports %s (rank %d): packages import only downwards", name, rank, imp, r)
			}
		}
	})
}
