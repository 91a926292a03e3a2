package stableport

import (
	"net"
	"strconv"
	"testing"
)

// TestPickIsBelowTheEphemeralRange: picked ports come from below the
// kernel's ephemeral range (so no outgoing connection or :0 listener takes
// one while its owner is down), are free when picked, and are spread
// enough to keep concurrent runs apart.
func TestPickIsBelowTheEphemeralRange(t *testing.T) {
	lo := ephemeralLow()
	if lo-floor < 1000 {
		t.Skipf("ephemeral range starts at %d: no room below it (Pick falls back to any free port)", lo)
	}
	seen := map[int]bool{}
	for range 20 {
		p, err := Pick()
		if err != nil {
			t.Fatal(err)
		}
		if p < floor || p >= lo {
			t.Fatalf("Pick() = %d, want in [%d, %d)", p, floor, lo)
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
