package proxy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/proxy"
	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

// TestFaultsThroughProxy sets faults on the proxy and checks what a real
// mcp-go client sees, on streamable HTTP and on legacy SSE (where answers
// written by a fault travel on the session's event stream).
func TestFaultsThroughProxy(t *testing.T) {
	t.Parallel()
	for _, tr := range []string{proxytest.StreamableHTTP, proxytest.SSE} {
		t.Run(tr, func(t *testing.T) {
			b := startBackend(t, "alpha", tr)
			p := startProxy(t, b.URL)
			s := dialSession(t, p.URL(), tr, true)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := s.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
				t.Fatal(err)
			}
			call := func() (time.Duration, string) {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": "x"}
				start := time.Now()
				res, err := s.c.CallTool(ctx, req)
				switch {
				case err != nil:
					return time.Since(start), "error: " + err.Error()
				case res.IsError:
					return time.Since(start), "isError: " + mcp.GetTextFromContent(res.Content[0])
				}
				return time.Since(start), "ok: " + mcp.GetTextFromContent(res.Content[0])
			}
			set := func(body string) {
				t.Helper()
				if err := p.SetFaults([]byte(body), 0); err != nil {
					t.Fatal(err)
				}
			}
			set(`[{kind: jsonrpc_error, code: -32000, message: boom, match: {method: tools/call}}]`)
			if _, got := call(); !strings.Contains(got, "boom") || !strings.HasPrefix(got, "error") {
				t.Errorf("jsonrpc_error: %s", got)
			}
			set(`[{kind: tool_error, text: broken, match: {tool: echo}}]`)
			if _, got := call(); got != "isError: broken" {
				t.Errorf("tool_error: %s", got)
			}
			set(`[{kind: http_status, status: 503, match: {method: tools/call}}]`)
			if _, got := call(); !strings.Contains(got, "503") {
				t.Errorf("http_status: %s", got)
			}
			set(`[{kind: latency, delay: 300ms, match: {method: tools/call}}]`)
			if took, got := call(); !strings.HasPrefix(got, "ok") || took < 300*time.Millisecond {
				t.Errorf("latency: %s after %s", got, took)
			}
			p.ClearFaults()
			if _, got := call(); !strings.HasPrefix(got, "ok") {
				t.Errorf("after clear: %s", got)
			}
		})
	}
}

// TestMoreKindsThroughProxy: kinds that cut or garble the answer reach a
// real mcp-go client as errors, on streamable HTTP.
func TestMoreKindsThroughProxy(t *testing.T) {
	t.Parallel()
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	p := startProxy(t, b.URL)
	s := dialSession(t, p.URL(), proxytest.StreamableHTTP, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{
		`[{kind: crash, mode: reset, match: {tool: echo}}]`,
		`[{kind: crash, stage: after_headers, match: {tool: echo}}]`,
		`[{kind: malformed, variant: invalid_json, match: {tool: echo}}]`,
		`[{kind: malformed, variant: truncated_sse, match: {tool: echo}}]`,
		`[{kind: stall, stage: after_headers, match: {tool: echo}}]`,
	} {
		if err := p.SetFaults([]byte(f), 0); err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithTimeout(ctx, time.Second)
		req := mcp.CallToolRequest{}
		req.Params.Name = "echo"
		_, err := s.c.CallTool(cctx, req)
		ccancel()
		if err == nil {
			t.Errorf("%s: the call succeeded", f)
		}
	}
	p.ClearFaults()
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	if _, err := s.c.CallTool(ctx, req); err != nil {
		t.Fatalf("after clear: %v", err)
	}
	for _, f := range []string{
		`[{kind: crash, exit: true}]`,
		`[{kind: flap, on: 1s, off: 1s, fault: {kind: crash, exit: true}}]`,
	} {
		err := p.SetFaults([]byte(f), 0)
		if err == nil || !strings.Contains(err.Error(), "not supported by a proxy") {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestDownAndSessionExpire: crash down closes the proxy's listener
// (connection refused) until cleared; session_expire makes the sessions
// seen answer 404 while new ones work.
func TestDownAndSessionExpire(t *testing.T) {
	t.Parallel()
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	p := startProxy(t, b.URL)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	sid := post(t, p.URL(), "", init).Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session")
	}
	if err := p.SetFaults([]byte(`[{kind: session_expire}]`), 0); err != nil {
		t.Fatal(err)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	testwait.For(t, 5*time.Second, "the old session to expire (404) after session_expire", func() bool {
		return post(t, p.URL(), sid, list).StatusCode == http.StatusNotFound
	})
	sid2 := post(t, p.URL(), "", init).Header.Get("Mcp-Session-Id")
	if sid2 == "" || post(t, p.URL(), sid2, list).StatusCode != http.StatusOK {
		t.Fatal("a new session does not work after session_expire")
	}
	if err := p.SetFaults([]byte(`[{kind: crash, mode: down}]`), 0); err != nil {
		t.Fatal(err)
	}
	refused := func() bool {
		req, _ := http.NewRequest(http.MethodPost, p.URL(), strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
		if err == nil {
			resp.Body.Close()
			return false
		}
		return strings.Contains(err.Error(), "connection refused")
	}
	testwait.For(t, 5*time.Second, "connections refused while down", refused)
	p.ClearFaults()
	testwait.For(t, 5*time.Second, "connections accepted after the clear", func() bool { return !refused() })
	if post(t, p.URL(), sid2, list).StatusCode != http.StatusOK {
		t.Fatal("the session does not work after down")
	}
}

// TestForgedVariantsThroughProxy: the proxy serves malformed wrong_id_event
// and wrong_id_resumed as the fake backends do. A plain mcp-go client takes
// the forged answer as its own (that is the point: a gateway behind the
// proxy must not); for wrong_id_resumed it gets it on the resuming GET.
func TestForgedVariantsThroughProxy(t *testing.T) {
	t.Parallel()
	for _, variant := range []string{"wrong_id_event", "wrong_id_resumed"} {
		t.Run(variant, func(t *testing.T) {
			_, s, ctx := faultedSession(t, proxytest.StreamableHTTP, `[{kind: malformed, variant: `+variant+`, match: {tool: echo}}]`)
			req := mcp.CallToolRequest{}
			req.Params.Name = "echo"
			res, err := s.c.CallTool(ctx, req)
			if err != nil || len(res.Content) == 0 || mcp.GetTextFromContent(res.Content[0]) != faults.ForgedText {
				t.Fatalf("%s through the proxy: %+v, %v; want the forged answer %q", variant, res, err, faults.ForgedText)
			}
		})
	}
}

// TestSSEStallReleasedByClear: on the legacy SSE transport a stall after
// headers or in the middle of the answer's event holds the answer back from
// the session stream; clearing the fault sends the real answer, and the
// call gets it intact (a cut event is closed on its own, never inside the
// answer that follows).
func TestSSEStallReleasedByClear(t *testing.T) {
	t.Parallel()
	for _, stage := range []string{faults.StageAfterHeaders, faults.StageMidBody} {
		t.Run(stage, func(t *testing.T) {
			p, s, ctx := faultedSession(t, proxytest.SSE, `[{kind: stall, stage: `+stage+`, match: {tool: echo}}]`)
			type outcome struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				req := mcp.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = "echo", map[string]any{"text": "held"}
				res, err := s.c.CallTool(ctx, req)
				done <- outcome{res, err}
			}()
			select {
			case o := <-done:
				t.Fatalf("the stall did not hold the call: %+v, %v", o.res, o.err)
			case <-time.After(300 * time.Millisecond):
			}
			cleared := time.Now()
			p.ClearFaults()
			select {
			case o := <-done:
				if o.err != nil || o.res.IsError || len(o.res.Content) == 0 || !strings.Contains(mcp.GetTextFromContent(o.res.Content[0]), `"held"`) {
					t.Fatalf("released %s stall: %+v, %v; want the echo's own answer", stage, o.res, o.err)
				}
				t.Logf("released %s after the clear", time.Since(cleared))
			case <-time.After(5 * time.Second):
				t.Fatal("clearing the faults did not release the call")
			}
		})
	}
}

// faultedSession starts a backend on transport tr behind a proxy holding
// the faults in yaml, and an initialized client session through it; ctx
// bounds the test (10 s).
func faultedSession(t *testing.T, tr, yaml string) (*proxy.Proxy, *session, context.Context) {
	t.Helper()
	b := startBackend(t, "alpha", tr)
	p := startProxy(t, b.URL)
	s := dialSession(t, p.URL(), tr, true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if _, err := s.c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetFaults([]byte(yaml), 0); err != nil {
		t.Fatal(err)
	}
	return p, s, ctx
}
