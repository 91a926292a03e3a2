//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package backend

import "syscall"

// peekSupported: alive can tell an idle connection the backend closed.
const peekSupported = true

// alive reports whether the idle connection behind raw is still open
// and silent: the backend has neither closed it nor sent anything on it
// (a peek that would block), as net/http's read loop would have noticed.
func alive(raw syscall.RawConn) bool {
	var b [1]byte
	var perr error
	n := -1
	err := raw.Read(func(fd uintptr) bool {
		n, _, perr = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		return true
	})
	return err == nil && n <= 0 && (perr == syscall.EAGAIN || perr == syscall.EWOULDBLOCK)
}
