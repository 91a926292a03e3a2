//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package backend

import "syscall"

// peekSupported: without a way to tell a closed idle connection, the
// direct forward sends on the gateway's Transport.
const peekSupported = false

func alive(syscall.RawConn) bool { return false }
