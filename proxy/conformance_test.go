package proxy_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/proxy"
	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

func startBackend(t testing.TB, name, tr string) *proxytest.Backend {
	t.Helper()
	b, err := proxytest.Start(name, tr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func startProxy(t testing.TB, upstream string, opts ...func(*proxy.Options)) *proxy.Proxy {
	t.Helper()
	o := proxy.Options{Upstream: upstream}
	for _, f := range opts {
		f(&o)
	}
	p, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p
}

// session is one client and the notifications it received.
type session struct {
	c     *client.Client
	mu    sync.Mutex
	notes []string
}

func (s *session) notifications() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.notes)
	slices.Sort(out)
	return out
}

func dialSession(t *testing.T, url, tr string, legacy bool) *session {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second}
	var trp transport.Interface
	var err error
	if tr == proxytest.SSE {
		trp, err = transport.NewSSE(url, transport.WithHTTPClient(&http.Client{}))
	} else {
		trp, err = transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(hc), transport.WithContinuousListening())
	}
	if err != nil {
		t.Fatal(err)
	}
	var opts []client.ClientOption
	if legacy {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	s := &session{c: client.NewClient(trp, opts...)}
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		b, _ := json.Marshal(n)
		s.mu.Lock()
		s.notes = append(s.notes, string(b))
		s.mu.Unlock()
	})
	// The ctx of Start carries the SSE stream: it lives as long as the test.
	// Cleanups run last-first: the stream's ctx ends before Close.
	t.Cleanup(func() { _ = s.c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// exchange runs every kind of request on s and returns each answer as
// JSON (or the error), keyed by a step name.
func exchange(t *testing.T, s *session) [][2]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out [][2]string
	add := func(step string, v any, err error) {
		if err != nil {
			out = append(out, [2]string{step, "error: " + err.Error()})
			return
		}
		b, _ := json.Marshal(v)
		out = append(out, [2]string{step, string(b)})
	}
	init, err := s.c.Initialize(ctx, mcp.InitializeRequest{})
	add("initialize", init, err)
	if err != nil {
		return out
	}
	add("ping", nil, s.c.Ping(ctx))
	tools, err := s.c.ListTools(ctx, mcp.ListToolsRequest{})
	add("tools/list", tools, err)
	call := func(name string, args map[string]any, meta *mcp.Meta) {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments, req.Params.Meta = name, args, meta
		res, err := s.c.CallTool(ctx, req)
		add("tools/call "+name, res, err)
	}
	call("echo", map[string]any{"text": "héllo \"world\"\n"}, nil)
	call("progress", map[string]any{"steps": 3}, &mcp.Meta{ProgressToken: "tok-1"})
	call("notify", nil, nil)
	call("nosuchtool", nil, nil)
	res, err := s.c.ListResources(ctx, mcp.ListResourcesRequest{})
	add("resources/list", res, err)
	tmpl, err := s.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	add("resources/templates/list", tmpl, err)
	for _, uri := range []string{"mem://alpha/readme", "mem://alpha/items/42", "mem://alpha/none"} {
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uri
		r, err := s.c.ReadResource(ctx, req)
		add("resources/read "+uri, r, err)
	}
	prompts, err := s.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	add("prompts/list", prompts, err)
	preq := mcp.GetPromptRequest{}
	preq.Params.Name, preq.Params.Arguments = "greet", map[string]string{"who": "proxy"}
	p, err := s.c.GetPrompt(ctx, preq)
	add("prompts/get", p, err)
	return out
}

// waitNotes waits until s received at least n notifications (bounded).
func waitNotes(s *session, n int) {
	deadline := time.Now().Add(5 * time.Second)
	for len(s.notifications()) < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestConformance runs a real mcp-go backend's tools, resources, prompts,
// notifications and progress directly and through the proxy with no fault,
// and compares every answer and every notification.
func TestConformance(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		tr     string
		legacy bool
	}{
		{"streamable-http/legacy", proxytest.StreamableHTTP, true},
		{"streamable-http/modern", proxytest.StreamableHTTP, false},
		{"sse", proxytest.SSE, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := startBackend(t, "alpha", tc.tr)
			p := startProxy(t, b.URL)
			if !strings.HasSuffix(p.URL(), b.URL[strings.LastIndex(b.URL, "/"):]) {
				t.Fatalf("proxy URL %s does not keep the upstream path of %s", p.URL(), b.URL)
			}
			direct := dialSession(t, b.URL, tc.tr, tc.legacy)
			proxied := dialSession(t, p.URL(), tc.tr, tc.legacy)
			want := exchange(t, direct)
			got := exchange(t, proxied)
			if len(want) < 14 {
				t.Fatalf("direct exchange stopped early: %v", want)
			}
			if !strings.Contains(want[2][1], `"progress"`) || !strings.Contains(want[3][1], "héllo") {
				t.Fatalf("direct answers lack the backend's tools: %v", want[2:4])
			}
			for i := range want {
				if i >= len(got) {
					t.Fatalf("proxied exchange stopped at step %d (%s)", i, want[i][0])
				}
				if want[i] != got[i] {
					t.Errorf("%s:\n direct:  %s\n proxied: %s", want[i][0], want[i][1], got[i][1])
				}
			}
			// Progress (3) + the logging message of progress; over HTTP the
			// notify tool's later message arrives on the standalone GET
			// stream (SSE: on the session's stream).
			wantNotes := 5
			waitNotes(direct, wantNotes)
			waitNotes(proxied, wantNotes)
			dn, pn := direct.notifications(), proxied.notifications()
			if len(dn) < wantNotes {
				t.Fatalf("direct client got %d notifications, want %d: %v (backend: %v)", len(dn), wantNotes, dn, b.Late())
			}
			if !slices.Equal(dn, pn) {
				t.Errorf("notifications differ:\n direct:  %v\n proxied: %v\n backend answered before its notifications were out: %v", dn, pn, b.Late())
			}
			if tc.tr == proxytest.SSE {
				checkEndpointRewritten(t, p)
			}
			if tc.legacy && tc.tr == proxytest.StreamableHTTP && proxied.c.GetSessionId() == "" {
				t.Error("no Mcp-Session-Id through the proxy")
			}
		})
	}
}

// TestSessionDeleteAndHeaders checks DELETE ends the session through the
// proxy (the old id then answers 404, as directly), and that request
// headers (Mcp-Session-Id, Last-Event-ID, Authorization) reach the backend
// unchanged.
func TestSessionDeleteAndHeaders(t *testing.T) {
	t.Parallel()
	b := startBackend(t, "alpha", proxytest.StreamableHTTP)
	p := startProxy(t, b.URL)
	for _, url := range []string{b.URL, p.URL()} {
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
		resp := post(t, url, "", init)
		sid := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != 200 || sid == "" {
			t.Fatalf("%s: initialize: %d session %q", url, resp.StatusCode, sid)
		}
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Last-Event-ID", "evt-7")
		req.Header.Set("Authorization", "Bearer xyz")
		req.Header.Set("Accept", "text/event-stream")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		gresp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err == nil {
			gresp.Body.Close()
		}
		cancel()
		h := b.Headers()
		last := h[len(h)-1]
		if last.Get("Last-Event-ID") != "evt-7" || last.Get("Authorization") != "Bearer xyz" || last.Get("Mcp-Session-Id") != sid {
			t.Errorf("%s: backend saw headers %v", url, last)
		}
		if v := last.Get("X-Forwarded-For"); v != "" {
			t.Errorf("%s: proxy added X-Forwarded-For %q", url, v)
		}
		del, _ := http.NewRequest(http.MethodDelete, url, nil)
		del.Header.Set("Mcp-Session-Id", sid)
		dresp, err := (&http.Client{Timeout: 5 * time.Second}).Do(del)
		if err != nil {
			t.Fatal(err)
		}
		dresp.Body.Close()
		if dresp.StatusCode != 200 {
			t.Errorf("%s: DELETE answered %d", url, dresp.StatusCode)
		}
		after := post(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if after.StatusCode != http.StatusNotFound {
			t.Errorf("%s: old session after DELETE answered %d, want 404", url, after.StatusCode)
		}
	}
}

func post(t *testing.T, url, sid, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// checkEndpointRewritten reads the legacy SSE endpoint event through the
// proxy: it must name the proxy, so that the client's POSTs come back
// through it.
func checkEndpointRewritten(t *testing.T, p *proxy.Proxy) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	var got string
	for !strings.Contains(got, "\n\n") && !strings.Contains(got, "\r\n\r\n") {
		n, err := resp.Body.Read(buf)
		got += string(buf[:n])
		if err != nil {
			break
		}
	}
	origin := strings.TrimSuffix(p.URL(), "/sse")
	if !strings.Contains(got, "event: endpoint\ndata: "+origin+"/message?sessionId=") {
		t.Fatalf("endpoint event through the proxy does not name it (%s): %q", origin, got)
	}
}
