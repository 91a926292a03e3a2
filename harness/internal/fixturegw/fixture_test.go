package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// backendScript is a fake backend's script: tool echo (and slow, for
// stalls), a resource and a prompt.
const backendScript = `name: %s
transport: %s
tools:
  - {name: echo, result: echo}
  - {name: slow, result: {text: slow}}
resources:
  - {uri: "mem://%[1]s/readme", name: readme, text: hello}
prompts:
  - {name: greet, text: hi}
`

// startBackend starts fake backend name on transport (streamable-http or
// sse), stopped at the test's end.
func startBackend(t *testing.T, name, tr string) *fakebackends.Backend {
	t.Helper()
	s, err := fakebackends.ParseScript([]byte(fmt.Sprintf(backendScript, name, tr)), name+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := fakebackends.Start(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// startFixture builds the fixture gateway as the command does from args
// (after --config, a config naming backends alpha and beta with call
// timeout 5 s) and serves it; it returns its MCP URL.
func startFixture(t *testing.T, alpha, beta *fakebackends.Backend, args ...string) string {
	t.Helper()
	var cfg strings.Builder
	cfg.WriteString("name: fixture-test\nbackends:\n")
	for _, b := range []*fakebackends.Backend{alpha, beta} {
		fmt.Fprintf(&cfg, "  - {name: %s, url: %q, transport: %s}\n", b.Name(), b.URL(), b.Script().Transport)
	}
	cfg.WriteString("timeouts: {initialize: 5s, call: 5s, list: 5s}\nincomingAuth: {type: anonymous}\n")
	path := filepath.Join(t.TempDir(), "vmcp.yaml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fx, err := newFixture(append([]string{"--config", path}, args...))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fx.f.routes())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fx.close(ctx)
	})
	return srv.URL + "/mcp"
}

// connect opens an initialized legacy (2025-11-25) client session with
// the fixture at url, closed at the test's end.
func connect(t *testing.T, url string) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, res
}

// callTool calls tool name with a 10 s deadline.
func callTool(t *testing.T, c *client.Client, name string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = map[string]any{"msg": "hi"}
	return c.CallTool(ctx, req)
}

// rawSession is a legacy MCP session spoken over plain HTTP, to see the
// gateway's answers as sent (status, id, code).
type rawSession struct {
	t       *testing.T
	url, id string
}

// rawConnect initializes a raw session with the fixture at url.
func rawConnect(t *testing.T, url string) *rawSession {
	t.Helper()
	s := &rawSession{t: t, url: url}
	resp, _ := s.post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + mcp.LATEST_LEGACY_PROTOCOL_VERSION +
		`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.id = resp.Header.Get("Mcp-Session-Id")
	if s.id == "" {
		t.Fatalf("initialize: no Mcp-Session-Id (status %d)", resp.StatusCode)
	}
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// post sends one JSON-RPC message and returns the response and its one
// JSON-RPC message (the data of an event stream's message, or the body).
func (s *rawSession) post(msg string) (*http.Response, []byte) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := s.request(ctx, msg)
	if err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok && len(bytes.TrimSpace(d)) > 0 {
			body = bytes.TrimSpace(d)
		}
	}
	return resp, body
}

// rpcAnswer is a JSON-RPC answer as sent.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func parseAnswer(t *testing.T, body []byte) rpcAnswer {
	t.Helper()
	var a rpcAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	return a
}

// setFaults sets b's faults, cleared at the test's end.
func setFaults(t *testing.T, b *fakebackends.Backend, fs ...faults.Fault) {
	t.Helper()
	if err := b.SetFaults(fs...); err != nil {
		t.Fatal(err)
	}
}

// send posts one JSON-RPC message without waiting for its answer to be
// judged (for a call left stalled; ctx ends it), from any goroutine.
func (s *rawSession) send(ctx context.Context, msg string) {
	req, err := s.request(ctx, msg)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// request is the POST of msg in the session.
func (s *rawSession) request(ctx context.Context, msg string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
	}
	return req, nil
}
