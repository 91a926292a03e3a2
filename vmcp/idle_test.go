package vmcp_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
)

func TestIdleSessionsAreClosed(t *testing.T) {
	t.Parallel()
	beta := startFake(t, resBetaScript)
	// sessionIdle is far above the gap between two calls of the busy
	// session even on a loaded machine (it was 150ms, and under load the
	// busy session, idle while the other connected, was closed too).
	const sessionIdle = time.Second
	g := startGateway(t, backendsYAML(nil, beta)+"timeouts: {sessionIdle: 1s}\n")
	idle := connect(t, g.URL(), false)
	busy := connect(t, g.URL(), false)
	// The idle session's last request: the gateway sees it at some time
	// after idleSince, so a gateway that waits out sessionIdle closes the
	// session at least sessionIdle after idleSince. (Taken when connect
	// returned, after the gateway's last sight of the session, a client
	// stalled on a loaded machine made the close look 74 ms early.)
	idleSince := time.Now()
	toolNames(t, idle)
	// The busy session keeps sending requests; the idle one sends none,
	// until the gateway closes it (bounded: a hang fails).
	deadline := time.Now().Add(15 * time.Second)
	for {
		if res, _ := callTool(t, busy, "beta_ok", nil); res.IsError {
			t.Fatal(resultText(res))
		}
		if _, ok := g.Session(idle.GetSessionId()); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("idle session still open after 15× sessionIdle")
		}
		time.Sleep(30 * time.Millisecond)
	}
	if d := time.Since(idleSince); d < sessionIdle {
		t.Fatalf("idle session closed after %v, before sessionIdle (%v)", d, sessionIdle)
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
	testwait.For(t, 5*time.Second, "beta's session to be closed", func() bool { return beta.SessionCount() == 1 })
}
