package controlplane

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Sweep kills the etcd and kube-apiserver processes of control planes whose
// owner process is dead (a test binary killed before Stop: envtest starts
// them in their own process group, without a parent-death signal) and
// removes those planes' directories. It finds them by the plane directory
// named in their command line ("harness-kube-<owner pid>-..."); processes
// of live owners are left alone. It returns the pids it killed. Linux
// only (it reads /proc); elsewhere it only removes directories.
func Sweep() []int {
	var killed []int
	procs, _ := os.ReadDir("/proc")
	marker := []byte(filepath.Join(os.TempDir(), OwnedDirPrefix))
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil {
			continue
		}
		owner, ok := planeOwner(cmdline, marker)
		if !ok || runtimes.ProcessAlive(owner) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	_, _ = runtimes.SweepLeftovers("")
	return killed
}

// planeOwner finds, in a NUL-separated command line, the owner pid of the
// first plane directory it names.
func planeOwner(cmdline, marker []byte) (int, bool) {
	i := bytes.Index(cmdline, marker)
	if i < 0 {
		return 0, false
	}
	rest := string(cmdline[i+len(marker):])
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}
