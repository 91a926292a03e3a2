package runtimes

import (
	"context"
	"fmt"
	"os"
	"sync"
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
// path given to SetChaosBinary, or else the binary BuildSharedChaos
// builds from the module the working directory is in (as tests run). It
// must run inside the module. ctx bounds the build (default 3 minutes);
// later calls return the first result.
func BuildChaos(ctx context.Context) (string, error) {
	chaosBuild.Lock()
	defer chaosBuild.Unlock()
	chaosBuild.once.Do(func() {
		if p := os.Getenv(ChaosBinEnv); p != "" {
			chaosBuild.path = p
			return
		}
		root := ModuleRoot()
		if root == "" {
			chaosBuild.err = fmt.Errorf("harness: build chaos: no go.mod above the working directory (set $%s to a chaos binary)", ChaosBinEnv)
			return
		}
		chaosBuild.path, chaosBuild.err = BuildSharedChaos(ctx, root)
	})
	return chaosBuild.path, chaosBuild.err
}
