package containers

import (
	"net"
	"strconv"
	"testing"
)

// TestPublishPortOutsideEphemeralRange: published ports come from below
// the kernel's ephemeral range (so no outgoing connection or :0 listener
// takes one while a partitioned container's port is released), and are
// free when picked.
//
// Serial: it checks that the ports it picks are free, from the range the
// parallel tests' containers publish on.
func TestPublishPortOutsideEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	if lo < 11000 {
		t.Skipf("ephemeral range starts at %d: no room below it (publishPort falls back to any free port)", lo)
	}
	seen := map[int]bool{}
	for range 20 {
		p, err := publishPort()
		if err != nil {
			t.Fatal(err)
		}
		if p < 10000 || p >= lo {
			t.Fatalf("publishPort() = %d, want in [10000, %d)", p, lo)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		_ = ln.Close()
		seen[p] = true
	}
	if len(seen) < 10 {
		t.Errorf("20 picks gave %d distinct ports: not random enough to keep concurrent runs apart", len(seen))
	}
}
