package runtimes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// ChaosPackage is the import path of the chaos command that BuildChaos
// builds.
const ChaosPackage = "github.com/vmcp-chaos/vmcp-chaos/cmd/chaos"

// ChaosBinEnv names an environment variable that, when set, is the path of
// a prebuilt chaos binary used instead of building one.
const ChaosBinEnv = "CHAOS_BIN"

var chaosBuild struct {
	sync.Mutex
	once sync.Once
	path string
	dir  string
	err  error
}

// SetChaosBinary makes BuildChaos return path without building, for
// example the running chaos command's own executable. Call it before the
// first BuildChaos.
func SetChaosBinary(path string) {
	chaosBuild.Lock()
	defer chaosBuild.Unlock()
	chaosBuild.once.Do(func() { chaosBuild.path = path })
}

// BuildChaos returns the path of a chaos binary: $CHAOS_BIN when set, the
// path given to SetChaosBinary, or else a binary built once per process
// with `go build` into a temporary directory (which CleanupChaosBuild
// removes). It must run inside the module (as tests do). ctx bounds the
// build (default 3 minutes); later calls return the first result.
func BuildChaos(ctx context.Context) (string, error) {
	chaosBuild.Lock()
	defer chaosBuild.Unlock()
	chaosBuild.once.Do(func() {
		if p := os.Getenv(ChaosBinEnv); p != "" {
			chaosBuild.path = p
			return
		}
		dir, err := OwnedTempDir("harness-chaos-bin-")
		if err != nil {
			chaosBuild.err = fmt.Errorf("harness: build chaos: %w", err)
			return
		}
		ctx, cancel := WithDefaultTimeout(ctx, 3*time.Minute)
		defer cancel()
		bin := filepath.Join(dir, "chaos")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ChaosPackage)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		if err != nil {
			_ = os.RemoveAll(dir)
			chaosBuild.err = fmt.Errorf("harness: go build %s: %w\n%s", ChaosPackage, err, out)
			return
		}
		chaosBuild.path, chaosBuild.dir = bin, dir
	})
	return chaosBuild.path, chaosBuild.err
}

// CleanupChaosBuild removes the binary BuildChaos built, if any (call it
// from TestMain after m.Run).
func CleanupChaosBuild() {
	chaosBuild.Lock()
	defer chaosBuild.Unlock()
	if chaosBuild.dir != "" {
		_ = os.RemoveAll(chaosBuild.dir)
		chaosBuild.dir = ""
	}
}
