package vmcp_test

import (
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// TestKeepaliveProbeAndReinitNeverOverlap: a keepalive probe is in flight
// (stalled at the backend) when a client call finds the backend session
// expired. The re-initialization waits for the probe: no initialize reaches
// the backend before the probe has ended, and the client call completes
// once it has.
func TestKeepaliveProbeAndReinitNeverOverlap(t *testing.T) {
	t.Parallel()
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: \"tool:ok\", interval: 4s, jitter: 5ms, timeout: 4s, maxFailures: 3, probeAfter: 1h}\n",
	}, beta)+"timeouts: {call: 15s, initialize: 5s}\n")
	// The first keepalive probe (within interval/4 of the session's start)
	// stalls at the backend until the faults are cleared.
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call", Tool: "ok"}, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}); err != nil {
		t.Fatal(err)
	}
	c := connect(t, g.URL(), false)
	testwait.For(t, 10*time.Second, "a stalled keepalive probe", func() bool { return beta.InFlight() == 1 })
	inits := countTool(beta.Requests(), "initialize", "")
	beta.ExpireSessions()

	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "beta_echo"
		res, err := c.CallTool(ctxT(t, 20*time.Second), req)
		done <- result{res, err}
	}()
	// The call meets the expired session (404) and starts a
	// re-initialization, which must wait for the probe.
	testwait.For(t, 10*time.Second, "a re-initialization waiting for the keepalive probe", func() bool {
		if vmcp.ReinitWaitsForKeepalive(g, c.GetSessionId(), "beta") {
			return true
		}
		select {
		case r := <-done:
			t.Fatalf("the client call finished (%v, %v) while the keepalive probe was still in flight: the re-initialization did not wait", r.res, r.err)
		default:
		}
		return false
	})
	if n := countTool(beta.Requests(), "initialize", ""); n != inits {
		t.Fatalf("%d initialize requests reached beta while the keepalive probe was in flight", n-inits)
	}
	released := time.Now()
	beta.ClearFaults() // the probe completes; then the re-initialization runs
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("client call did not finish after the probe ended")
	}
	if r.err != nil || r.res.IsError {
		t.Fatalf("client call after re-initialization: %v %v", r.err, r.res)
	}
	var probeEnd, initAt time.Time
	for _, rec := range beta.Requests() {
		if rec.Method == "tools/call" && rec.Tool == "ok" && rec.Fault != "" {
			probeEnd = rec.Time.Add(time.Duration(rec.DurationMS * float64(time.Millisecond)))
		}
	}
	seen := 0
	for _, rec := range beta.Requests() {
		if rec.Method == "initialize" {
			seen++
			if seen == inits+1 {
				initAt = rec.Time
			}
		}
	}
	if probeEnd.IsZero() || initAt.IsZero() {
		t.Fatalf("probe end %v, re-initialization %v: not both in the backend's log", probeEnd, initAt)
	}
	if initAt.Before(released) {
		t.Fatalf("re-initialization reached beta at %v, before the stalled probe was released (%v)", initAt, released)
	}
	t.Logf("probe ended %v after release; initialize arrived %v after release", probeEnd.Sub(released), initAt.Sub(released))
}
