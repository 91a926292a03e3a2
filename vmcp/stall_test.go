package vmcp_test

import (
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
)

// TestKeepaliveStallCountsForBreaker: a keepalive probe whose own timeout
// (shorter than the call timeout) cuts a stalled backend off is a timeout
// the breaker counts, not a client cancel it ignores (issue 12 item 5: a
// stall must never read as a cancel, or a stalled backend escapes health
// and breaker).
//
// Serial: its keepalive probes time out after 100 ms and the breaker must
// open on them before a call does. Beside the parallel tests (-race, a
// second copy of the package running) the circuit opened late; and a
// keepalive probe refused by the open circuit afterwards replaced the
// timeout as the session's last error (the reference now keeps the
// backend's own failure).
func TestKeepaliveStallCountsForBreaker(t *testing.T) {
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: \"tool:ok\", interval: 150ms, jitter: 10ms, timeout: 100ms, maxFailures: 10, probeAfter: 1h}\n",
	}, beta)+"timeouts: {call: 10s}\nbreaker: {enabled: true, failureThreshold: 2, openTimeout: 1h}\n")
	c := connect(t, g.URL(), false)
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Tool: "ok"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testwait.For(t, 10*time.Second, "beta's circuit open after stalled keepalive probes", func() bool {
		return healthOf(t, g).Backends["beta"].CircuitState == "open"
	})

	t.Logf("circuit open %v after the stall began", time.Since(start))
	// Keepalive goes on probing (every 150 ms) and the open circuit refuses
	// those probes before the network: the refusals must not replace the
	// timeout as beta's last error (under load they used to, between the
	// circuit opening and this test reading the session).
	time.Sleep(500 * time.Millisecond)
	s, ok := g.Session(c.GetSessionId())
	if !ok {
		t.Fatal("no gateway session")
	}
	h, ok := s.Backend("beta")
	if !ok {
		t.Fatal("no beta in the session")
	}
	st := h.Status()
	if st.LastErrorKind != "timeout" {
		t.Errorf("beta in the session: last error %q kind %q, want kind timeout", st.LastError, st.LastErrorKind)
	}
}
