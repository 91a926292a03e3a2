package harness

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// childProcAttr is the SysProcAttr of every process the harness spawns: its
// own process group (so signals reach its children too), and SIGKILL when
// the harness dies, so a killed `chaos run` or test binary leaves no
// gateway or backend running.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// isZombie reports whether /proc says the process has exited but is not
// reaped yet.
func isZombie(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}
