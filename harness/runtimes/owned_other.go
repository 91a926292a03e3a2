//go:build !linux

package runtimes

import "syscall"

// ChildProcAttr is the SysProcAttr of every process the harness spawns: its
// own process group. (Only Linux can ask the kernel to kill a child when its
// parent dies; elsewhere a SIGKILLed harness can leave children running.)
func ChildProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
