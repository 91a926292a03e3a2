package containers

import (
	"context"
	"testing"
	"time"
)

// TestProbeHungEngine: an engine socket that accepts and never answers is
// given up on at the probe's own deadline (testcontainers alone would hang
// far past its ctx).
func TestProbeHungEngine(t *testing.T) {
	sock := hungSocket(t)
	setDefaultEnv()
	start := time.Now()
	cli, err := probe(context.Background(), time.Second, "unix://"+sock)
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
