package history

import (
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// TestAdoptGoesOnWithTheFreshSession: a client that adopted another's
// session makes its calls, and answers questions about its session, as
// that one; its own session is closed.
func TestAdoptGoesOnWithTheFreshSession(t *testing.T) {
	b := startBackend(t, runtimes.InProcess{}, script("beta", fakebackends.TransportStreamableHTTP))
	rec := NewRecorder("adopt")
	old := dialBackend(t, b, RevisionLegacy, rec, WithClientName("c1"))
	fresh := dialBackend(t, b, RevisionLegacy, rec, WithClientName("c1-fresh"))
	oldID := old.SessionID()
	if oldID == "" || oldID == fresh.SessionID() {
		t.Fatalf("session ids %q and %q: want two legacy sessions", oldID, fresh.SessionID())
	}
	old.Adopt(ctxT(t, 5*time.Second), fresh)
	call := old.CallTool(ctxT(t, 10*time.Second), "echo", map[string]any{"msg": "after"})
	if call.Outcome != OutcomeOK || call.Client != "c1-fresh" || call.Session != fresh.SessionID() {
		t.Fatalf("call after Adopt: outcome %s, client %q, session %q; want ok on c1-fresh's session %q", call.Outcome, call.Client, call.Session, fresh.SessionID())
	}
	if old.SessionID() != fresh.SessionID() || old.Name() != "c1-fresh" {
		t.Fatalf("the adopting client reports session %q name %q, want the fresh one's", old.SessionID(), old.Name())
	}
	old.Adopt(ctxT(t, 5*time.Second), old) // adopting itself changes nothing
	if old.SessionID() != fresh.SessionID() {
		t.Fatal("adopting itself changed the session")
	}
}
