package runtimes

import (
	"context"
	"debug/elf"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Processes (here: goroutines) that ask for the same source tree at once
// get one static chaos binary, at one path, that runs.
func TestBuildSharedChaos(t *testing.T) {
	t.Parallel()
	root := ModuleRoot()
	if root == "" {
		t.Fatal("no go.mod above the test's directory")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	paths, errs := make([]string, 2), make([]error, 2)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Go(func() { paths[i], errs[i] = BuildSharedChaos(ctx, root) })
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("builds: %v, %v", errs[0], errs[1])
	}
	if paths[0] != paths[1] || !strings.HasPrefix(paths[0], SharedChaosDir()) {
		t.Fatalf("two builds of one tree: %s and %s, want one path under %s", paths[0], paths[1], SharedChaosDir())
	}
	f, err := elf.Open(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		t.Errorf("%s is dynamically linked", paths[0])
	}
	out, err := exec.CommandContext(ctx, paths[0], "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "version: ") {
		t.Errorf("%s version: %v %s", paths[0], err, out)
	}
}

// A build removes the binaries of source trees that are gone, and keeps
// those of trees that exist, and those whose tree it cannot read (a file
// being written by another process's build).
func TestPruneSharedChaos(t *testing.T) {
	t.Parallel()
	gone := filepath.Join(SharedChaosDir(), "test-gone-"+strconv.Itoa(os.Getpid()))
	kept := filepath.Join(SharedChaosDir(), "test-kept-"+strconv.Itoa(os.Getpid()))
	unread := filepath.Join(SharedChaosDir(), "test-unread-"+strconv.Itoa(os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(gone); os.RemoveAll(kept); os.RemoveAll(unread) })
	for dir, root := range map[string]string{gone: filepath.Join(t.TempDir(), "removed-clone"), kept: t.TempDir(), unread: ""} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rootFile), []byte(root), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pruneSharedChaos()
	if _, err := os.Stat(gone); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the binary of a removed tree is still there: %v", err)
	}
	if _, err := os.Stat(kept); err != nil {
		t.Errorf("the binary of a live tree was removed: %v", err)
	}
	if _, err := os.Stat(unread); err != nil {
		t.Errorf("the binary of a tree not named yet was removed: %v", err)
	}
}
