package runtimes

import "syscall"

// ChildProcAttr is the SysProcAttr of every process the harness spawns: its
// own process group (so signals reach its children too), and SIGKILL when
// the harness dies, so a killed `chaos run` or test binary leaves no
// gateway or backend running.
func ChildProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
