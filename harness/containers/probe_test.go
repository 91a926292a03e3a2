package containers

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestProbeHungEngine: an engine socket that accepts and never answers is
// given up on at the probe's own deadline (testcontainers alone would hang
// far past its ctx).
func TestProbeHungEngine(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 16)
	defer func() {
		_ = ln.Close()
		for {
			select {
			case c := <-conns:
				_ = c.Close()
			default:
				return
			}
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case conns <- c: // never answered
			default:
				_ = c.Close()
			}
		}
	}()
	setDefaultEnv()
	start := time.Now()
	cli, err := probe(context.Background(), time.Second, client.WithHost("unix://"+sock))
	took := time.Since(start)
	if err == nil {
		_ = cli.Close()
		t.Fatal("a hung engine passed the probe")
	}
	if took > 3*time.Second {
		t.Fatalf("the probe took %s (bound 1 s)", took)
	}
	t.Logf("hung engine: %v after %s", err, took)
}
