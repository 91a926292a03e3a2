package vmcp_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// TestSessionsShareTheCatalogue: the first session lists each backend
// (and so does the catalogue session opened beside it); later sessions
// open their own backend session (an initialize each) and take the lists
// from the catalogue session, checked by a ping, without listing again.
func TestSessionsShareTheCatalogue(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	first := connect(t, g.URL(), false)
	want := toolNames(t, first)
	lists0, inits0, pings0 := countTool(b.Requests(), "tools/list", ""), countTool(b.Requests(), "initialize", ""), countTool(b.Requests(), "ping", "")
	for i := range 3 {
		c := connect(t, g.URL(), false)
		if got := toolNames(t, c); !slices.Equal(got, want) {
			t.Errorf("session %d lists %v, want %v (the first session's)", i+2, got, want)
		}
		if res, _ := callTool(t, c, "beta_echo", map[string]any{"i": i}); res.IsError {
			t.Fatalf("session %d: %s", i+2, resultText(res))
		}
	}
	recs := b.Requests()
	if n := countTool(recs, "tools/list", "") - lists0; n != 0 {
		t.Errorf("beta listed its tools %d more times for 3 sessions, want 0 (the catalogue is shared)", n)
	}
	if n := countTool(recs, "initialize", "") - inits0; n != 3 {
		t.Errorf("beta saw %d initializes for 3 sessions, want 3 (one backend session each)", n)
	}
	// A ping vouches for the catalogue session for catalogueFresh (250 ms):
	// three sessions opened one after another need one to three.
	if n := countTool(recs, "ping", "") - pings0; n < 1 || n > 3 {
		t.Errorf("beta saw %d pings for 3 sessions, want 1 to 3 (the catalogue session checked)", n)
	}
}

// TestCatalogueDroppedWhenTheBackendChanges: a backend replaced at the
// same address by one with other tools (a restart with a new version) is
// listed again by the next session: the catalogue session's ping gets a
// 404 there, so the old lists are not served.
func TestCatalogueDroppedWhenTheBackendChanges(t *testing.T) {
	t.Parallel()
	a, old := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, old))
	if got := toolNames(t, connect(t, g.URL(), false)); !slices.Contains(got, "beta_other") {
		t.Fatalf("first session lists %v, want beta_other", got)
	}
	addr := old.Addr()
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	renewed := startFake(t, fmt.Sprintf("name: beta\nprotocol: legacy\nlisten: %q\ntools:\n  - {name: echo}\n  - {name: added}\n", addr))
	c := connect(t, g.URL(), false)
	got := toolNames(t, c)
	if slices.Contains(got, "beta_other") || !slices.Contains(got, "beta_added") {
		t.Fatalf("a session opened after beta changed lists %v, want beta_added and not beta_other (a stale catalogue)", got)
	}
	if res, _ := callTool(t, c, "beta_added", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	if n := countTool(renewed.Requests(), "tools/list", ""); n == 0 {
		t.Error("the renewed beta was never listed")
	}
	// The next session shares the new catalogue.
	if n := listsDuring(renewed, func() {
		if got := toolNames(t, connect(t, g.URL(), false)); !slices.Contains(got, "beta_added") {
			t.Errorf("the next session lists %v, want beta_added", got)
		}
	}); n != 0 {
		t.Errorf("the next session listed beta %d times, want 0", n)
	}
}

// listsDuring is how many tools/list requests b received while fn ran.
func listsDuring(b *fakebackends.Backend, fn func()) int {
	n := countTool(b.Requests(), "tools/list", "")
	fn()
	return countTool(b.Requests(), "tools/list", "") - n
}

// TestClosedSessionsKeepTheCatalogue: sessions closed at once after
// initialize (their own backend sessions still opening, then cut) do not
// drop the catalogue session: the session's end says nothing about the
// backend.
func TestClosedSessionsKeepTheCatalogue(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	_ = connect(t, g.URL(), false).Close()
	if n := listsDuring(b, func() {
		for range 10 {
			_ = connect(t, g.URL(), false).Close()
		}
	}); n != 0 {
		t.Errorf("beta listed its tools %d times for 10 sessions closed at once, want 0", n)
	}
}

// TestBackgroundOpenFailureNamesTheBackend: a session that took beta's
// lists from the catalogue session opens its own beta session after
// answering; when that open fails (HTTP 403 on initialize), the call to
// beta fails naming beta, the session reports beta as error, and the
// catalogue session is dropped: the next session lists on its own (and,
// beta still refusing, leaves it out).
func TestBackgroundOpenFailureNamesTheBackend(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	_ = connect(t, g.URL(), false).Close()
	if err := b.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "initialize"},
		Params: &faults.HTTPStatus{Status: 403}}); err != nil {
		t.Fatal(err)
	}
	c := connect(t, g.URL(), false)
	if got := toolNames(t, c); !slices.Contains(got, "beta_echo") {
		t.Fatalf("a session opened on the catalogue lists %v, want beta_echo", got)
	}
	res, _ := callTool(t, c, "beta_echo", nil)
	if be, kind := metaOf(res); !res.IsError || be != "beta" || kind != "http_status" || !strings.Contains(resultText(res), "403") {
		t.Fatalf("call to beta whose backend session was refused: isError=%v backend=%q kind=%q %q; want an error naming beta, http_status, 403",
			res.IsError, be, kind, resultText(res))
	}
	st, _ := g.Session(c.GetSessionId())
	if ms, _ := st.BackendState("beta"); ms.State != vmcp.StateError {
		t.Errorf("beta state = %+v, want error", ms)
	}
	if got := toolNames(t, connect(t, g.URL(), false)); slices.Contains(got, "beta_echo") {
		t.Errorf("the next session lists %v: the catalogue session outlived beta refusing sessions", got)
	}
}
