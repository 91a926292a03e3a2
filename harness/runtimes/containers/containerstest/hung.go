// Package containerstest holds test support for code that talks to a
// Docker engine: an engine that never answers, to prove probes are bounded.
package containerstest

import (
	"net"
	"path/filepath"
	"testing"
)

// HungEngine returns the path of a unix socket that accepts connections and
// never answers them, as a hung Docker engine does (use it as
// DOCKER_HOST=unix://PATH). The socket and its connections are closed with
// the test.
func HungEngine(t testing.TB) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	conns := make(chan net.Conn, 64)
	t.Cleanup(func() {
		_ = ln.Close()
		for {
			select {
			case c := <-conns:
				_ = c.Close()
			default:
				return
			}
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c: // held open, never answered
			default:
				_ = c.Close()
			}
		}
	}()
	return sock
}
