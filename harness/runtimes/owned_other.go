//go:build !linux

package harness

import "syscall"

// childProcAttr is the SysProcAttr of every process the harness spawns: its
// own process group. (Only Linux can ask the kernel to kill a child when its
// parent dies; elsewhere a SIGKILLed harness can leave children running.)
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
