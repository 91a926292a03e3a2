package vmcp_test

import (
	"net/http"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// TestSessionLost400IsReinitializedAndRetried: an SSE backend that has
// forgotten the session answers its POST with `400 Invalid session ID`
// (what mcp-go's SSE server does when a stream ends before the gateway
// notices). The request was not executed, so, as for a 404, the gateway
// re-initializes once and retries once: the client sees no failure. A 400
// that does not speak of the session stays an HTTP 400 and is not retried.
func TestSessionLost400IsReinitializedAndRetried(t *testing.T) {
	t.Parallel()
	b := startFake(t, sseScript)
	g := startGateway(t, gwConfig(faultTimeouts, b))
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "delta_echo", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	init0, calls0 := countTool(b.Requests(), "initialize", ""), countTool(b.Requests(), "tools/call", "echo")
	lost := map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32602, "message": "Invalid session ID"}}
	b.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Count: 1, Params: &faults.HTTPStatus{Status: http.StatusBadRequest, Body: &faults.Body{JSON: lost}}})
	res, d := callTool(t, c, "delta_echo", map[string]any{"after": "lost session"})
	if res.IsError {
		t.Fatalf("call after a lost session failed: %s", resultText(res))
	}
	t.Logf("400 Invalid session ID, re-initialize, retry: %v", d)
	recs := b.Requests()
	if n := countTool(recs, "initialize", "") - init0; n != 1 {
		t.Errorf("re-initializations = %d, want 1", n)
	}
	if n := countTool(recs, "tools/call", "echo") - calls0; n != 2 {
		t.Errorf("tools/call = %d, want 2 (the 400 and one retry)", n)
	}
	st, _ := g.Session(c.GetSessionId())
	if ms, _ := st.BackendState("delta"); ms.State != vmcp.StateConnected || ms.Reinitializations != 1 {
		t.Errorf("delta state = %+v", ms)
	}

	// A plain 400 is the backend's answer: reported, not retried.
	calls1 := countTool(b.Requests(), "tools/call", "echo")
	b.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Count: 1, Params: &faults.HTTPStatus{Status: http.StatusBadRequest, Body: &faults.Body{Text: "bad arguments"}}})
	res, _ = callTool(t, c, "delta_echo", nil)
	checkErr(t, res, "delta", "http_status", `backend "delta" unavailable: HTTP 400 Bad Request`)
	if n := countTool(b.Requests(), "tools/call", "echo") - calls1; n != 1 {
		t.Errorf("tools/call after a plain 400 = %d, want 1 (no retry)", n)
	}
}
