package vmcp_test

import (
	"slices"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

const modernOnly = `
name: mod
protocol: modern
tools:
  - {name: echo}
  - {name: other, result: {text: fine}}
`

const legacyOnly = `
name: leg
protocol: legacy
tools:
  - {name: echo}
  - {name: other, result: {text: fine}}
`

// TestModernAndLegacyBackends: a stateless-only backend and a sessionful-
// only one, both configured "protocol: auto" (the default), serve clients
// of both revisions: their tools are listed, calls work, and faults come
// back naming the backend. A legacy client's session first tries the
// sessionful initialize on every backend; the modern-only backend refuses
// it with HTTP 400, and the gateway falls back to negotiation.
func TestModernAndLegacyBackends(t *testing.T) {
	t.Parallel()
	mod, leg := startFake(t, modernOnly), startFake(t, legacyOnly)
	g := startGateway(t, gwConfig(faultTimeouts, mod, leg))
	cases := []struct {
		name  string
		fault faults.Fault
		kind  string
		text  string
	}{
		{"http 403", faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403}}, "http_status", "unavailable: HTTP 403 Forbidden"},
		{"crash reset", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}, "connection_reset", "unavailable: connection reset"},
		{"jsonrpc error", faults.Fault{Kind: faults.KindJSONRPCError, Params: &faults.JSONRPCError{Code: -32603, Message: "kaput"}}, "jsonrpc_error", "error: kaput"},
		{"malformed json", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedInvalidJSON}}, "invalid_response", "unavailable: invalid response"},
	}
	for _, modern := range []bool{false, true} {
		rev := map[bool]string{false: "legacy client", true: "modern client"}[modern]
		c := connect(t, g.URL(), modern)
		names := toolNames(t, c)
		for _, want := range []string{"mod_echo", "mod_other", "leg_echo", "leg_other"} {
			if !slices.Contains(names, want) {
				t.Errorf("%s: tool %s missing from %v", rev, want, names)
			}
		}
		if !modern {
			s, ok := g.Session(c.GetSessionId())
			if !ok {
				t.Fatalf("%s: no gateway session", rev)
			}
			for _, name := range []string{"mod", "leg"} {
				st, _ := s.BackendState(name)
				t.Logf("%s: backend %s: %s %s %s", rev, name, st.State, st.ProtocolVersion, st.LastError)
				if st.State != "connected" {
					t.Errorf("%s: backend %s is %s: %s", rev, name, st.State, st.LastError)
				}
			}
		}
		for _, fb := range []*fakebackends.Backend{mod, leg} {
			name := fb.Script().Name
			if res, _ := callTool(t, c, name+"_other", nil); res.IsError || resultText(res) != "fine" {
				t.Errorf("%s: %s_other = %q (isError %v)", rev, name, resultText(res), res.IsError)
			}
			for _, tc := range cases {
				f := tc.fault
				f.Match = faults.Match{Method: "tools/call", Tool: "echo"}
				if err := fb.SetFaults(f); err != nil {
					t.Fatal(err)
				}
				res, d := callTool(t, c, name+"_echo", map[string]any{"x": 1})
				t.Logf("%s: %s %s: %v %s", rev, name, tc.name, d, resultText(res))
				checkErr(t, res, name, tc.kind, `backend "`+name+`" `+tc.text)
				if d > 2*time.Second {
					t.Errorf("%s: %s %s took %v", rev, name, tc.name, d)
				}
				fb.ClearFaults()
				if res, _ := callTool(t, c, name+"_echo", map[string]any{"x": 2}); res.IsError {
					t.Errorf("%s: %s did not recover after %s: %s", rev, name, tc.name, resultText(res))
				}
			}
		}
	}
}
