package proxy_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

// TestFaultsThroughProxy sets faults on the proxy and checks what a real
// mcp-go client sees, on streamable HTTP and on legacy SSE (where answers
// written by a fault travel on the session's event stream).
func TestFaultsThroughProxy(t *testing.T) {
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
		`[{kind: crash, mode: down}]`,
		`[{kind: crash, exit: true}]`,
		`[{kind: session_expire}]`,
		`[{kind: flap, on: 1s, off: 1s, fault: {kind: session_expire}}]`,
	} {
		err := p.SetFaults([]byte(f), 0)
		if err == nil || !strings.Contains(err.Error(), "not supported by a proxy") {
			t.Errorf("%s: %v", f, err)
		}
	}
}
