package vmcp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestIdleSessionsAreClosed(t *testing.T) {
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(nil, beta)+"timeouts: {sessionIdle: 150ms}\n")
	busy := connect(t, g.URL(), false)
	idle := connect(t, g.URL(), false)
	// The busy session keeps sending requests; the idle one sends none.
	deadline := time.Now().Add(600 * time.Millisecond)
	for time.Now().Before(deadline) {
		if res, _ := callTool(t, busy, "beta_ok", nil); res.IsError {
			t.Fatal(resultText(res))
		}
		time.Sleep(30 * time.Millisecond)
	}
	if _, ok := g.Session(idle.GetSessionId()); ok {
		t.Fatal("idle session still open after 4× sessionIdle")
	}
	if _, ok := g.Session(busy.GetSessionId()); !ok {
		t.Fatal("an active session was closed as idle")
	}
	// The idle client's next request gets 404: it knows to re-initialize.
	_, err := idle.CallTool(ctxT(t, 5*time.Second), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "beta_ok"}})
	if !errors.Is(err, transport.ErrSessionTerminated) {
		t.Fatalf("request on an idle-closed session: %v; want session terminated (404)", err)
	}
	// Its backend session was closed too.
	eventually(t, 5*time.Second, "beta's session to be closed", func() bool { return beta.SessionCount() == 1 })
}
