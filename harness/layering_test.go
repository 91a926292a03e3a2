package harness

import (
	"cmp"
	"go/build"
	"io/fs"
	"path/filepath"
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
