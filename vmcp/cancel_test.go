package vmcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// rawPost sends one JSON-RPC message on a legacy session (or, with session
// "", as a stateless request) and returns the
// decoded response (nil for 202).
func rawPost(ctx context.Context, url, session string, msg any) (map[string]any, error) {
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		header.Set(mcp.HeaderSessionID, session)
		header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	} else if m, ok := msg.(map[string]any); ok {
		// A stateless (2026-07-28) request: the revision, client info and
		// capabilities in params._meta, method and name mirrored in headers.
		header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_PROTOCOL_VERSION)
		params := map[string]any{"_meta": map[string]any{
			mcp.MetaKeyProtocolVersion:    mcp.LATEST_PROTOCOL_VERSION,
			mcp.MetaKeyClientInfo:         map[string]any{"name": "vmcp-test", "version": "1"},
			mcp.MetaKeyClientCapabilities: map[string]any{},
		}}
		orig, _ := m["params"].(map[string]any)
		for k, v := range orig {
			params[k] = v
			if s, isStr := v.(string); isStr && (k == "name" || k == "uri") {
				header.Set(mcp.HeaderName, s)
			}
		}
		if method, _ := m["method"].(string); method != "" {
			header.Set(mcp.HeaderMethod, method)
		}
		m2 := map[string]any{"params": params}
		for k, v := range m {
			if k != "params" {
				m2[k] = v
			}
		}
		msg = m2
	}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusAccepted {
		return nil, nil
	}
	if i := bytes.Index(data, []byte("data: ")); i >= 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = data[i+6:]
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, errors.New(resp.Status + ": " + string(data))
	}
	return out, nil
}

func countMethod(b *fakebackends.Backend, method string) int {
	return countTool(b.Requests(), method, "")
}

// TestClientCancelPropagates: a client that gives up (its HTTP request
// ends) cancels the backend call, and the backend is sent
// notifications/cancelled.
func TestClientCancelPropagates(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig("timeouts: {call: 10s, close: 500ms}\n", a, b))
	for _, modern := range []bool{false, true} {
		// The last round's stalled call ends at beta when beta notices the
		// gateway gave up, later on a loaded machine: until it has, beta's
		// in-flight count would end this round's wait below at once, and
		// the client would give up before its call reached beta (CI,
		// 2026-12-03: no notifications/cancelled in 3 s).
		testwait.For(t, 5*time.Second, "beta has no call in flight", func() bool { return b.InFlight() == 0 })
		c := connect(t, g.URL(), modern)
		b.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call", Tool: "echo"}})
		before := countMethod(b, "notifications/cancelled")
		// The client gives up once its call is stalled at beta (a call
		// given up before it reached beta leaves nothing to cancel there:
		// under load that took longer than a fixed 300 ms).
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			defer cancel()
			for end := time.Now().Add(5 * time.Second); b.InFlight() == 0 && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
			}
		}()
		req := mcp.CallToolRequest{}
		req.Params.Name = "beta_echo"
		start := time.Now()
		_, err := c.CallTool(ctx, req)
		cancel()
		if err == nil {
			t.Fatal("call succeeded")
		}
		testwait.For(t, 3*time.Second, "the condition", func() bool { return countMethod(b, "notifications/cancelled") > before })
		t.Logf("modern=%v: backend told notifications/cancelled %v after the call started", modern, time.Since(start))
		b.ClearFaults()
		if res, _ := callTool(t, c, "beta_echo", nil); res.IsError {
			t.Errorf("after cancel: %s", resultText(res))
		}
	}
}

// TestNotificationsCancelledFromClient: an explicit notifications/cancelled
// from the client ends the backend call at once and reaches the backend.
func TestNotificationsCancelledFromClient(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGateway(t, gwConfig("timeouts: {call: 10s, close: 500ms}\n", a, b))
	c := connect(t, g.URL(), false)
	b.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/call", Tool: "echo"}})
	session := c.GetSessionId()
	var wg sync.WaitGroup
	var resp map[string]any
	var callErr error
	var took time.Duration
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		resp, callErr = rawPost(ctxT(t, 10*time.Second), g.URL(), session, map[string]any{
			"jsonrpc": "2.0", "id": 4242, "method": "tools/call", "params": map[string]any{"name": "beta_echo"},
		})
		took = time.Since(start)
	}()
	testwait.For(t, 3*time.Second, "the condition", func() bool { return b.InFlight() > 0 })
	if _, err := rawPost(ctxT(t, 5*time.Second), g.URL(), session, map[string]any{
		"jsonrpc": "2.0", "method": "notifications/cancelled", "params": map[string]any{"requestId": 4242, "reason": "user"},
	}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 3*time.Second, "the condition", func() bool { return countMethod(b, "notifications/cancelled") > 0 })
	wg.Wait()
	t.Logf("cancelled call returned after %v: %v %v", took, resp, callErr)
	if took > 2*time.Second {
		t.Errorf("cancelled call took %v", took)
	}
}

// TestResourceAndPromptErrorsCarryData: resources/read and prompts/get
// failures are JSON-RPC errors naming the backend, with data {backend,
// kind}, for sessionful and stateless clients.
func TestResourceAndPromptErrorsCarryData(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, alphaScript), startFake(t, betaScript)
	g := startGateway(t, gwConfig(faultTimeouts+"aggregation: {conflictResolution: priority, priorityOrder: [beta, alpha]}\n", a, b))
	c := connect(t, g.URL(), false)
	connect(t, g.URL(), true) // opens the pool while beta answers
	b.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403, Body: &faults.Body{Text: "nope"}}})
	for _, session := range []string{c.GetSessionId(), ""} {
		for _, msg := range []map[string]any{
			{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": map[string]any{"uri": "mem://shared"}},
			{"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": map[string]any{"name": "greet"}},
		} {
			start := time.Now()
			resp, err := rawPost(ctxT(t, 5*time.Second), g.URL(), session, msg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s in %v: %v", msg["method"], time.Since(start), resp["error"])
			e, _ := resp["error"].(map[string]any)
			if e == nil {
				t.Fatalf("no error: %v", resp)
			}
			if m := e["message"].(string); m != `backend "beta" unavailable: HTTP 403 Forbidden` {
				t.Errorf("message = %q", m)
			}
			data, _ := e["data"].(map[string]any)
			if data["backend"] != "beta" || data["kind"] != string(vmcp.KindHTTPStatus) {
				t.Errorf("stateless=%v %s: data = %v", session == "", msg["method"], data)
			}
		}
	}
	// The mcp-go client sees the message.
	_, err := c.ReadResource(ctxT(t, 5*time.Second), mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "mem://shared"}})
	if err == nil || !strings.Contains(err.Error(), `backend "beta" unavailable: HTTP 403 Forbidden`) {
		t.Errorf("client error = %v", err)
	}
}

// TestBoundedShutdownWithStalledBackends: calls in flight on stalled
// backends, and a backend that stalls the DELETE too, do not hold up
// Shutdown beyond the close timeout.
func TestBoundedShutdownWithStalledBackends(t *testing.T) {
	t.Parallel()
	a, b := startFake(t, plainAlpha), startFake(t, plainBeta)
	g := startGatewayShutByTest(t, gwConfig("timeouts: {call: 30s, close: 500ms}\n", a, b))
	clients := []bool{false, false, true}
	var conns []*client.Client
	for _, modern := range clients {
		c := connect(t, g.URL(), modern)
		callTool(t, c, "beta_echo", nil) // open the session / pool first
		conns = append(conns, c)
	}
	// Everything stalls from now on, the DELETE included.
	a.SetFaults(faults.Fault{Kind: faults.KindStall})
	b.SetFaults(faults.Fault{Kind: faults.KindStall})
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mcp.CallToolRequest{}
			req.Params.Name = "beta_echo"
			_, _ = c.CallTool(ctxT(t, 20*time.Second), req)
		}()
	}
	testwait.For(t, 3*time.Second, "the condition", func() bool { return b.InFlight() >= len(clients) })
	start := time.Now()
	if err := g.Shutdown(ctxT(t, 10*time.Second)); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	d := time.Since(start)
	t.Logf("shutdown with %d stalled calls took %v", len(clients), d)
	if d > 3*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	waitDone(t, &wg, 5*time.Second)
	a.ClearFaults()
	b.ClearFaults()
}

func waitDone(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("calls still running after %v", d)
	}
}
