package runtimes

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Temporary directories the harness makes are named
// "<prefix><owner pid>-<random>" with one of ownedPrefixes, so a run killed
// before it could remove them (SIGKILL, `go test -timeout`) leaves
// directories whose owner is known to be dead; SweepLeftovers removes them.
var ownedPrefixes = []string{"harness-backend-", "harness-gateway-", "harness-chaos-bin-", "harness-kube-"}

var sweepOnce sync.Once

// OwnedTempDir makes a temporary directory named for this process (prefix
// is one of ownedPrefixes). The first call in a process sweeps the
// leftovers of dead runs first.
func OwnedTempDir(prefix string) (string, error) {
	sweepOnce.Do(func() { _, _ = SweepLeftovers("") })
	return os.MkdirTemp("", prefix+strconv.Itoa(os.Getpid())+"-")
}

// SweepLeftovers removes, from dir (os.TempDir() when ""), the temporary
// directories of harness runs whose owner process is gone, and returns the
// paths it removed. Directories of live processes (this one included) are
// left alone. The harness calls it once per process before making its first
// directory.
func SweepLeftovers(dir string) ([]string, error) {
	dir = cmp.Or(dir, os.TempDir())
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		pid, ok := ownerPID(e.Name())
		if !ok || !e.IsDir() || processAlive(pid) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("harness: sweep %s: %w", p, err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// ownerPID parses the owner pid out of an owned directory's name.
func ownerPID(name string) (int, bool) {
	for _, prefix := range ownedPrefixes {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		digits, _, ok := strings.Cut(rest, "-")
		if !ok {
			return 0, false
		}
		pid, err := strconv.Atoi(digits)
		if err != nil || pid <= 0 {
			return 0, false
		}
		return pid, true
	}
	return 0, false
}

// ProcessAlive reports whether a process with this pid exists and is not
// a zombie (see processAlive): whether what it owns may be swept.
func ProcessAlive(pid int) bool { return processAlive(pid) }

// processAlive reports whether a process with this pid exists (a zombie,
// dead but not yet reaped, counts as gone). A pid reused by an unrelated
// process keeps its directory until that one ends: never a wrong removal.
func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	return !isZombie(pid)
}

// isZombie reports whether /proc says the process has exited but is not
// reaped yet (never where there is no /proc).
func isZombie(pid int) bool {
	f := ProcStatFields("/proc/" + strconv.Itoa(pid) + "/stat")
	return len(f) > 0 && f[0] == "Z"
}
