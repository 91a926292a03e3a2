package runtimes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
	"github.com/vmcp-chaos/vmcp-chaos/internal/hostslot"
)

// SharedChaosDir is where BuildSharedChaos keeps its binaries: one
// directory per source tree (with a file naming the tree), under the
// user's cache directory (the system's temporary directory without one).
// Like Go's build cache it outlives the processes that fill it; removing
// it costs one build. A build removes the directories of trees that are
// gone.
func SharedChaosDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "vmcp-chaos", "chaos-bin")
}

// BuildSharedChaos returns a static (CGO_ENABLED=0) chaos binary built
// from the source tree root, shared by every process on the host that
// asks for the same tree: the test packages of one `go test ./...` link
// chaos once, not once each. One process builds at a time (a host slot);
// `go build` leaves a binary that is up to date as it is, and replaces
// one that is not by a rename, so a process running the old one is not
// disturbed. It builds as .ci/run builds $CHAOS_BIN (CGO_ENABLED=0, no
// other flag), so the two share Go's build cache. ctx bounds the build
// (default 10 minutes: a -race suite beside it on 2 cores took over 3).
func BuildSharedChaos(ctx context.Context, root string) (string, error) {
	ctx, cancel := WithDefaultTimeout(ctx, 10*time.Minute)
	defer cancel()
	sum := sha256.Sum256([]byte(root))
	key := hex.EncodeToString(sum[:6])
	dir := filepath.Join(SharedChaosDir(), key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("harness: build chaos: %w", err)
	}
	release, err := hostslot.Acquire(ctx, "chaos-build-"+key, 1)
	if err != nil {
		return "", fmt.Errorf("harness: build chaos in %s: %w", root, err)
	}
	defer release()
	// Whole or not at all: another process's prune reads it meanwhile.
	if b, err := os.ReadFile(filepath.Join(dir, rootFile)); err != nil || string(b) != root {
		if err := atomicfile.Write(filepath.Join(dir, rootFile), func(w io.Writer) error { _, err := io.WriteString(w, root); return err }); err != nil {
			return "", fmt.Errorf("harness: build chaos: %w", err)
		}
	}
	pruneSharedChaos()
	bin := filepath.Join(dir, "chaos")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ChaosPackage)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("harness: CGO_ENABLED=0 go build %s in %s: %w\n%s", ChaosPackage, root, err, out)
	}
	return bin, nil
}

// rootFile names, in a directory of SharedChaosDir, the file that holds
// the path of the source tree its binary was built from.
const rootFile = "source-tree"

// pruneSharedChaos removes the directories of SharedChaosDir whose source
// tree no longer exists (a clone removed after its tests).
func pruneSharedChaos() {
	dirs, _ := os.ReadDir(SharedChaosDir())
	for _, d := range dirs {
		dir := filepath.Join(SharedChaosDir(), d.Name())
		root, err := os.ReadFile(filepath.Join(dir, rootFile))
		if err != nil || !filepath.IsAbs(string(root)) {
			continue // being made, or not ours
		}
		if _, err := os.Stat(string(root)); errors.Is(err, fs.ErrNotExist) {
			_ = os.RemoveAll(dir)
		}
	}
}

// ModuleRoot is the directory of the nearest go.mod at or above the
// working directory ("" when there is none).
func ModuleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}
