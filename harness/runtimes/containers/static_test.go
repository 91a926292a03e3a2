package containers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceTree: the static binary is built from the vmcp-chaos module
// holding the working directory, only with a Go toolchain on PATH;
// anywhere else (no module, another module) there is no source tree, and
// the reason says so.
//
// Serial: its subtests change PATH (t.Setenv) and the working directory
// (t.Chdir).
func TestSourceTree(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	wantRoot := filepath.Dir(filepath.Dir(filepath.Dir(wd))) // harness/runtimes/containers
	if root, why := sourceTree(); root != wantRoot {
		t.Errorf("in the module: root %q (%s), want %q", root, why, wantRoot)
	}
	t.Run("no toolchain", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		if root, why := sourceTree(); root != "" || !strings.Contains(why, "no Go toolchain on PATH") {
			t.Errorf("root %q, why %q", root, why)
		}
	})
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("// another module\nmodule \"example.com/other\"\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"another module": other, "no module": t.TempDir()} {
		t.Run(name, func(t *testing.T) {
			t.Chdir(dir)
			if root, why := sourceTree(); root != "" || !strings.Contains(why, "is not in the "+chaosModule+" source tree") {
				t.Errorf("root %q, why %q", root, why)
			}
		})
	}
}

// TestNoStaticChaos: without a static binary the container scenarios are
// skipped with the reason and the fix, or fail with them under
// VMCP_CHAOS_REQUIRE_DOCKER=1; a $CHAOS_BIN that is not static is named.
//
// Serial: it sets VMCP_CHAOS_REQUIRE_DOCKER (t.Setenv).
func TestNoStaticChaos(t *testing.T) {
	const fix = "this chaos binary is dynamically linked: build it with CGO_ENABLED=0, or set CHAOS_BIN to a static build"
	t.Setenv(RequireDockerEnv, "")
	err := noStaticChaos("/opt/chaos-dyn", "/usr/local/bin/chaos", "no source tree")
	if !IsSkip(err) || !strings.Contains(err.Error(), fix) || !strings.Contains(err.Error(), "$CHAOS_BIN=/opt/chaos-dyn is not a static executable") ||
		!strings.Contains(err.Error(), "no source tree") {
		t.Errorf("skip: %v", err)
	}
	if err := noStaticChaos("", "", "x"); !IsSkip(err) || !strings.Contains(err.Error(), "set CHAOS_BIN to a CGO_ENABLED=0 build") {
		t.Errorf("not the chaos command: %v", err)
	}
	t.Setenv(RequireDockerEnv, "1")
	if err := noStaticChaos("", "/usr/local/bin/chaos", "x"); IsSkip(err) || !strings.Contains(err.Error(), fix) {
		t.Errorf("with %s=1: %v (want a failure naming the fix)", RequireDockerEnv, err)
	}
}
