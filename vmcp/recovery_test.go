package vmcp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// TestRestartReinitializesOnceAndRetriesOnce: a restarted backend answers
// 404 for the old session; the gateway re-initializes once and retries the
// call once.
func TestRestartReinitializesOnceAndRetriesOnce(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "beta_echo", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	init0, calls0 := countTool(b.Requests(), "initialize", ""), countTool(b.Requests(), "tools/call", "echo")
	if err := b.Restart(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	res, d := callTool(t, c, "beta_echo", map[string]any{"after": "restart"})
	if res.IsError {
		t.Fatalf("call after restart failed: %s", resultText(res))
	}
	t.Logf("call after restart (404, re-initialize, retry) took %v", d)
	recs := b.Requests()
	if n := countTool(recs, "initialize", "") - init0; n != 1 {
		t.Errorf("re-initializations = %d, want 1", n)
	}
	if n := countTool(recs, "tools/call", "echo") - calls0; n != 2 {
		t.Errorf("tools/call after restart = %d, want 2 (the 404 and one retry)", n)
	}
	n404 := 0
	for _, r := range recs {
		if r.Method == "tools/call" && r.Status == http.StatusNotFound {
			n404++
		}
	}
	if n404 != 1 {
		t.Errorf("404 answers = %d, want 1", n404)
	}
	st, _ := g.Session(c.GetSessionId())
	if ms, _ := st.BackendState("beta"); ms.State != vmcp.StateConnected || ms.Reinitializations != 1 {
		t.Errorf("beta state = %+v", ms)
	}
}

// TestConcurrentCallersShareOneReinit: many calls hit an expired session at
// once; exactly one re-initialization happens and every call succeeds.
func TestConcurrentCallersShareOneReinit(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "beta_echo", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	init0 := countTool(b.Requests(), "initialize", "")
	b.ExpireSessions()
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _ := callTool(t, c, "beta_echo", map[string]any{"i": i})
			if res.IsError {
				errs <- resultText(res)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("call failed: %s", e)
	}
	if n := countTool(b.Requests(), "initialize", "") - init0; n != 1 {
		t.Errorf("re-initializations = %d, want 1", n)
	}
}

// TestNoRetryOnOtherFailures: a failure other than 404 is not retried.
func TestNoRetryOnOtherFailures(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	c := connect(t, g.URL(), false)
	for _, f := range []faults.Fault{
		{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 503}},
		{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}},
		{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedInvalidJSON}},
	} {
		f.Match = faults.Match{Method: "tools/call", Tool: "echo"}
		if err := b.SetFaults(f); err != nil {
			t.Fatal(err)
		}
		if res, _ := callTool(t, c, "beta_echo", nil); !res.IsError {
			t.Fatalf("%s: want error", f.Kind)
		}
		// Count the requests this fault was applied to (a crashed request
		// is logged when its handler ends, possibly after the client saw
		// the reset, so counting all calls would pick it up in the next
		// round). A crashed request may not be logged yet; none may be
		// logged twice.
		n := 0
		for _, r := range b.Requests() {
			if r.Method == "tools/call" && r.Tool == "echo" && strings.HasPrefix(r.Fault, string(f.Kind)+"#") {
				n++
			}
		}
		if n > 1 || (n == 0 && f.Kind != faults.KindCrash) {
			t.Errorf("%s: backend saw %d calls, want exactly 1", f.Kind, n)
		}
	}
}

// TestSessionStateTransitions: connected → error (with lastError) on a
// failed call → connected on the next success; visible in the Go API and
// in GET /api/sessions/{id} and /status.
func TestSessionStateTransitions(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	c := connect(t, g.URL(), false)
	id := c.GetSessionId()
	state := func() vmcp.MemberStatus {
		var st vmcp.SessionStatus
		getJSON(t, strings.TrimSuffix(g.URL(), "/mcp")+"/api/sessions/"+id, &st)
		return st.Backends["beta"]
	}
	if s := state(); s.State != vmcp.StateConnected {
		t.Fatalf("initial state %+v", s)
	}
	b.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: 403}})
	callTool(t, c, "beta_echo", nil)
	s := state()
	if s.State != vmcp.StateError || !strings.Contains(s.LastError, "HTTP 403 Forbidden") || s.LastErrorKind != vmcp.KindHTTPStatus || s.LastErrorAt == nil {
		t.Fatalf("after 403: %+v", s)
	}
	// Another backend's success is not beta's: beta stays in error.
	if res, _ := callTool(t, c, "alpha_echo", nil); res.IsError {
		t.Fatalf("alpha: %s", resultText(res))
	}
	var ss vmcp.SessionStatus
	getJSON(t, strings.TrimSuffix(g.URL(), "/mcp")+"/api/sessions/"+id, &ss)
	if ss.Backends["beta"].State != vmcp.StateError || ss.Backends["alpha"].State != vmcp.StateConnected {
		t.Fatalf("after alpha's success: beta %s, alpha %s; want error, connected", ss.Backends["beta"].State, ss.Backends["alpha"].State)
	}
	var st vmcp.Status
	getJSON(t, strings.TrimSuffix(g.URL(), "/mcp")+"/status", &st)
	if st.Counts.Sessions != 1 || st.Counts.States[vmcp.StateError] != 1 {
		t.Errorf("status counts = %+v", st.Counts)
	}
	b.ClearFaults()
	callTool(t, c, "beta_echo", nil)
	if s := state(); s.State != vmcp.StateConnected || s.LastError == "" {
		t.Fatalf("after recovery: %+v (lastError is kept for the record)", s)
	}
	// Closing the client session closes the gateway session.
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the condition", func() bool { _, ok := g.Session(id); return !ok })
}

// TestSessionStartsWithoutDeadBackend: a backend that cannot be reached at
// initialize is recorded as error and left out; the session works.
func TestSessionStartsWithoutDeadBackend(t *testing.T) {
	t.Parallel()
	b := startFake(t, plainBeta)
	cfg := "name: t\nbackends:\n" +
		"  - {name: alpha, url: \"http://127.0.0.1:1/mcp\"}\n" +
		"  - {name: beta, url: \"" + b.URL() + "\"}\n" + faultTimeouts
	g := startGateway(t, cfg)
	for _, modern := range []bool{false, true} {
		c := connect(t, g.URL(), modern)
		if got := toolNames(t, c); strings.Join(got, ",") != "beta_echo,beta_other" {
			t.Fatalf("tools = %v", got)
		}
	}
	st := g.Status()
	if len(st.Sessions) != 1 {
		t.Fatalf("sessions = %d", len(st.Sessions))
	}
	alpha := st.Sessions[0].Backends["alpha"]
	if alpha.State != vmcp.StateError || alpha.LastErrorKind != vmcp.KindConnectionRefused {
		t.Errorf("alpha = %+v", alpha)
	}
	t.Logf("alpha in session: %s", alpha.LastError)
}

// TestSessionFailsWhenNoBackendAnswers: initialize fails naming every
// backend, bounded by the initialize timeout.
func TestSessionFailsWhenNoBackendAnswers(t *testing.T) {
	t.Parallel()
	stalled := startFake(t, "name: slow\nprotocol: legacy\ntools: [{name: x}]\nfaults: [{kind: stall}]\n")
	cfg := "name: t\nbackends:\n" +
		"  - {name: alpha, url: \"http://127.0.0.1:1/mcp\"}\n" +
		"  - {name: slow, url: \"" + stalled.URL() + "\"}\n" +
		"timeouts: {initialize: 500ms, call: 500ms, close: 300ms}\n"
	g := startGateway(t, cfg)
	start := time.Now()
	_, err := tryConnect(g.URL(), false)
	d := time.Since(start)
	if err == nil {
		t.Fatal("initialize succeeded")
	}
	t.Logf("initialize failed in %v: %v", d, err)
	for _, want := range []string{`backend "alpha" unavailable: connection refused`, `backend "slow" unavailable: timed out after 500ms`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if d > 3*time.Second {
		t.Errorf("initialize took %v", d)
	}
	if n := len(g.Sessions()); n != 0 {
		t.Errorf("%d sessions left", n)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestPersisting404IsSessionExpired: a backend that answers 404 again after
// the one re-initialization fails the call as session_expired, having seen
// the call exactly twice.
func TestPersisting404IsSessionExpired(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig(faultTimeouts, a, b))
	for _, modern := range []bool{false, true} {
		c := connect(t, g.URL(), modern)
		if err := b.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call", Tool: "echo"}, Params: &faults.HTTPStatus{Status: http.StatusNotFound}}); err != nil {
			t.Fatal(err)
		}
		calls0, init0 := countTool(b.Requests(), "tools/call", "echo"), countTool(b.Requests(), "initialize", "")
		res, d := callTool(t, c, "beta_echo", nil)
		t.Logf("modern=%v: %v %s", modern, d, resultText(res))
		checkErr(t, res, "beta", "session_expired", `backend "beta" unavailable: session expired`)
		recs := b.Requests()
		if n := countTool(recs, "tools/call", "echo") - calls0; n != 2 {
			t.Errorf("modern=%v: backend saw %d calls, want 2 (the 404 and one retry)", modern, n)
		}
		if n := countTool(recs, "initialize", "") - init0; n != 1 {
			t.Errorf("modern=%v: %d re-initializations, want 1", modern, n)
		}
		b.ClearFaults()
		if res, _ := callTool(t, c, "beta_echo", nil); res.IsError {
			t.Errorf("modern=%v: no recovery: %s", modern, resultText(res))
		}
	}
}

// TestWrongPathIs404NotExpired: a backend URL with a wrong path (a server
// that answers 404 to everything: the fake backends serve MCP on any path)
// answers 404 to initialize. That is no expired session: the backend is
// recorded as error with HTTP 404 Not Found.
func TestWrongPathIs404NotExpired(t *testing.T) {
	t.Parallel()
	b := startFake(t, plainBeta)
	nf := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(nf.Close)
	wrong := nf.URL + "/nope"
	cfg := "name: t\nbackends:\n" +
		"  - {name: alpha, url: \"" + wrong + "\"}\n" +
		"  - {name: beta, url: \"" + b.URL() + "\"}\n" + faultTimeouts
	g := startGateway(t, cfg)
	c := connect(t, g.URL(), false)
	s, ok := g.Session(c.GetSessionId())
	if !ok {
		t.Fatal("no gateway session")
	}
	st, _ := s.BackendState("alpha")
	t.Logf("alpha: %s", st.LastError)
	if st.State != vmcp.StateError || st.LastErrorKind != vmcp.KindHTTPStatus || st.LastError != `backend "alpha" unavailable: HTTP 404 Not Found` {
		t.Errorf("alpha = %s %s %q, want error http_status `backend \"alpha\" unavailable: HTTP 404 Not Found`", st.State, st.LastErrorKind, st.LastError)
	}
}
