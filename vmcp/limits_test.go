package vmcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// TestMaxSessions: an initialize over limits.maxSessions is answered HTTP
// 503 with a message naming the limit; closing a session frees its slot.
func TestMaxSessions(t *testing.T) {
	t.Parallel()
	b := startFake(t, plainBeta)
	g := startGateway(t, gwConfig("limits: {maxSessions: 2}\n", b))
	c1 := connect(t, g.URL(), false)
	_ = connect(t, g.URL(), false)

	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodPost, g.URL(), strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var msg bytes.Buffer
	_, _ = msg.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(msg.String(), "limits.maxSessions (2)") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("third initialize: HTTP %d %q (Retry-After %q); want 503 naming limits.maxSessions (2)", resp.StatusCode, msg.String(), resp.Header.Get("Retry-After"))
	}
	if n := len(g.Sessions()); n != 2 {
		t.Fatalf("%d sessions open, want 2", n)
	}
	// The mcp-go client sees the refusal as an initialize error.
	if c, err := tryConnect(g.URL(), false); err == nil {
		_ = c.Close()
		t.Fatal("a third session opened over limits.maxSessions: 2")
	}
	// Stateless (2026-07-28) requests hold no session and still work.
	if m := connect(t, g.URL(), true); len(toolNames(t, m)) == 0 {
		t.Fatal("stateless client lists no tools at the session limit")
	}
	// DELETE frees the slot.
	_ = c1.Close()
	testwait.For(t, 10*time.Second, "the closed session to end", func() bool { return len(g.Sessions()) <= 1 })
	if c, err := tryConnect(g.URL(), false); err != nil {
		t.Fatalf("after closing a session: %v", err)
	} else {
		_ = c.Close()
	}
}

// TestMaxSessionsConcurrent: concurrent initializes never open more than
// limits.maxSessions sessions.
func TestMaxSessionsConcurrent(t *testing.T) {
	t.Parallel()
	b := startFake(t, plainBeta)
	g := startGateway(t, gwConfig("limits: {maxSessions: 3}\n", b))
	var wg sync.WaitGroup
	var mu sync.Mutex
	opened := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := tryConnect(g.URL(), false)
			if err == nil {
				mu.Lock()
				opened++
				mu.Unlock()
				t.Cleanup(func() { _ = c.Close() })
			}
		}()
	}
	wg.Wait()
	if opened != 3 || len(g.Sessions()) != 3 {
		t.Fatalf("%d clients connected, %d sessions open; want 3 with maxSessions 3", opened, len(g.Sessions()))
	}
}

// toolsScript is a fake backend listing n tools.
func toolsScript(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\nprotocol: legacy\ntools:\n", name)
	for i := range n {
		fmt.Fprintf(&b, "  - {name: t%d}\n", i)
	}
	return b.String()
}

// TestMaxToolsPerBackend: a backend listing more tools than
// limits.maxToolsPerBackend is left out of the session with an error that
// names it and the limit (never a silently truncated list); the others
// serve.
func TestMaxToolsPerBackend(t *testing.T) {
	t.Parallel()
	big := startFake(t, toolsScript("big", 6))
	small := startFake(t, toolsScript("small", 5))
	logs := &syncBuf{}
	g := startGateway(t, gwConfig("limits: {maxToolsPerBackend: 5}\n", big, small),
		vmcp.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	c := connect(t, g.URL(), false)
	names := toolNames(t, c)
	if len(names) != 5 || slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "big_") }) {
		t.Fatalf("tools = %v, want small's 5 and none of big's", names)
	}
	st := g.Status()
	if len(st.Sessions) != 1 {
		t.Fatalf("sessions = %+v", st.Sessions)
	}
	bs := st.Sessions[0].Backends["big"]
	want := "tools/list holds 6 tools, more than limits.maxToolsPerBackend (5)"
	if bs.State != vmcp.StateError || !strings.Contains(bs.LastError, want) || bs.LastErrorKind != vmcp.KindInvalidResponse {
		t.Fatalf("big = %+v, want state error with %q", bs, want)
	}
	if !strings.Contains(logs.String(), "backend=big") || !strings.Contains(logs.String(), "too many tools") {
		t.Fatalf("no log line names the refused backend:\n%s", logs.String())
	}
	// Alone, the backend's refusal fails initialize with the reason.
	g2 := startGateway(t, gwConfig("limits: {maxToolsPerBackend: 5}\n", big))
	if _, err := tryConnect(g2.URL(), false); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("initialize with only big: %v, want %q", err, want)
	}
}

// TestBadToolNamesDropped: tool names that are empty or hold NUL, a
// newline, other control characters or invalid UTF-8 (which arrives as
// U+FFFD) never reach clients; each is dropped with a logged reason naming
// the backend.
func TestBadToolNamesDropped(t *testing.T) {
	t.Parallel()
	bad := []string{"", "nul\x00x", "line\nbreak", "tab\tx", "bad\xffutf8"}
	s := server.NewMCPServer("weird", "1", server.WithToolCapabilities(false))
	for _, n := range append([]string{"good"}, bad...) {
		s.AddTool(mcp.Tool{Name: n, InputSchema: mcp.ToolInputSchema{Type: "object"}}, func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	ts := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(ts.Close)
	logs := &syncBuf{}
	g := startGateway(t, "backends:\n  - {name: weird, url: \""+ts.URL+"/mcp\"}\n",
		vmcp.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	for _, modern := range []bool{false, true} {
		names := toolNames(t, connect(t, g.URL(), modern))
		if !slices.Equal(names, []string{"weird_good"}) {
			raw, _ := json.Marshal(names)
			t.Fatalf("modern=%v: tools = %s, want only weird_good", modern, raw)
		}
	}
	out := logs.String()
	for _, why := range []string{"the name is empty", "control character U+0000", "control character U+000A", "control character U+0009", "not valid UTF-8"} {
		if !strings.Contains(out, why) {
			t.Errorf("no logged reason %q", why)
		}
	}
	if !strings.Contains(out, "backend=weird") {
		t.Errorf("the log does not name the backend:\n%s", out)
	}
}

// syncBuf is a goroutine-safe log sink.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
