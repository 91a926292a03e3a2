package vmcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// TestSessionStartBoundedByInitializeTimeout: a backend answers initialize
// but its tools/list stalls. The list timeout (10 s) is longer than the
// initialize timeout (1 s), which bounds the whole opening of a backend:
// the session starts within it, with that backend in state error (timed
// out after 1s) and the other backend's tools.
//
// Serial: alpha must answer initialize within the 1 s initialize timeout.
// Beside the parallel tests (-race, a second copy of the package running)
// the starved process let it time out and the session did not start.
func TestSessionStartBoundedByInitializeTimeout(t *testing.T) {
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	if err := b.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/list"}}); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gwConfig("timeouts: {initialize: 1s, call: 5s, list: 10s, close: 500ms}\n", a, b))
	for _, modern := range []bool{false, true} {
		start := time.Now()
		c := connect(t, g.URL(), modern)
		t.Logf("modern=%v: connected in %v", modern, time.Since(start))
		names := toolNames(t, c)
		d := time.Since(start)
		t.Logf("modern=%v: session started and listed in %v: %v", modern, d, names)
		if d > 3*time.Second {
			t.Errorf("modern=%v: start took %v, want about the initialize timeout (1s)", modern, d)
		}
		if strings.Join(names, ",") != "alpha_echo" {
			t.Errorf("modern=%v: tools = %v, want alpha's only", modern, names)
		}
		var st vmcp.MemberStatus
		if modern {
			slots := g.Status().Pool.Backends["beta"]
			if len(slots) != 1 {
				t.Fatalf("pool members of beta: %+v", slots)
			}
			st = slots[0]
		} else {
			s, ok := g.Session(c.GetSessionId())
			if !ok {
				t.Fatal("no gateway session")
			}
			st, _ = s.BackendState("beta")
		}
		if st.State != vmcp.StateError || st.LastErrorKind != vmcp.KindTimeout ||
			st.LastError != `backend "beta" unavailable: timed out after 1s` {
			t.Errorf("modern=%v: beta = %s %s %q, want error timeout `backend \"beta\" unavailable: timed out after 1s`", modern, st.State, st.LastErrorKind, st.LastError)
		}
	}
}
