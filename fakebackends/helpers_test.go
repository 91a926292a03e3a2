package fakebackends

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// testScript is a small healthy script; callers add faults.
func testScript(t *testing.T, transport Transport, protocol Protocol, faults ...Fault) *Script {
	t.Helper()
	s := &Script{
		Name: "beta", Transport: transport, Protocol: protocol,
		Tools: []ToolSpec{
			{Name: "echo", Description: "Echo back the message", Input: map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}},
			{Name: "slow", Description: "Slow tool", Result: ToolResult{Text: "done"}},
			{Name: "greet", Description: "Fixed text", Result: ToolResult{Text: "hello"}},
		},
		Resources: []ResourceSpec{{URI: "mem://beta/readme", Text: "hello"}},
		Prompts:   []PromptSpec{{Name: "greet", Text: "Hello from beta"}},
		Faults:    faults,
	}
	return s
}

// startBackend starts a backend that is closed when the test ends.
func startBackend(t *testing.T, s *Script, opts ...Option) *Backend {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := Start(ctx, s, opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b
}

// revision is which MCP revision a test client speaks.
type revision string

const (
	revLegacy revision = "legacy"
	revModern revision = "modern"
)

// connect opens an initialized mcp-go client to the backend.
func connect(t *testing.T, b *Backend, rev revision) *client.Client {
	t.Helper()
	c, err := dial(b, rev)
	if err != nil {
		t.Fatalf("connect %s: %v", rev, err)
	}
	t.Cleanup(func() { closeClient(c) })
	return c
}

func dial(b *Backend, rev revision) (*client.Client, error) {
	httpClient := &http.Client{Timeout: 30 * time.Second}
	var tr transport.Interface
	var err error
	if b.script.Transport == TransportSSE {
		tr, err = transport.NewSSE(b.URL(), transport.WithHTTPClient(httpClient))
	} else {
		tr, err = transport.NewStreamableHTTP(b.URL(), transport.WithHTTPBasicClient(httpClient))
	}
	if err != nil {
		return nil, err
	}
	var opts []client.ClientOption
	if rev == revLegacy {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	opts = append(opts, client.WithDiscoverTimeout(2*time.Second))
	c := client.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The SSE transport keeps Start's ctx for its stream: it must outlive
	// this function. Close ends it.
	if err := c.Start(context.Background()); err != nil {
		closeClient(c)
		return nil, err
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: string(protocolFor(rev)),
		ClientInfo:      mcp.Implementation{Name: "fakebackends-test", Version: "0"},
	}}); err != nil {
		closeClient(c)
		return nil, err
	}
	return c, nil
}

func protocolFor(rev revision) string {
	if rev == revLegacy {
		return mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	return mcp.LATEST_PROTOCOL_VERSION
}

// closeClient closes without waiting on mcp-go's 5 s DELETE timeout.
func closeClient(c *client.Client) {
	done := make(chan struct{})
	go func() { _ = c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(6 * time.Second):
	}
}

// call calls a tool with a deadline and returns the result, the error and
// how long it took.
// The clock starts before the deadline is set, so a call that ends at its
// deadline always took at least timeout (started after, a loaded machine
// made it look shorter).
func call(c *client.Client, tool string, args map[string]any, timeout time.Duration) (*mcp.CallToolResult, error, time.Duration) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: args}})
	return res, err, time.Since(start)
}

func resultText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			return tc.Text
		}
	}
	return ""
}

// atOnce fails a call that should fail at once (refused, reset, an error
// status) but waited for its deadline instead. How long it took is logged,
// not bounded: on a loaded machine "at once" can take a second or more,
// while waiting for the deadline is what a hang looks like.
func atOnce(t *testing.T, what string, err error, took time.Duration) {
	t.Helper()
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s: waited for its deadline (%s): %v; want it to fail at once", what, took, err)
	}
	t.Logf("%s: failed after %s", what, took)
}

func ptr[T any](v T) *T { return &v }
