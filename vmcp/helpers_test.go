package vmcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// startFake starts a fake backend from a YAML script; it is closed when the
// test ends.
func startFake(t *testing.T, script string) *fakebackends.Backend {
	t.Helper()
	s, err := fakebackends.ParseScript([]byte(script), t.Name()+".yaml")
	if err != nil {
		t.Fatalf("parse script: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := fakebackends.Start(ctx, s)
	if err != nil {
		t.Fatalf("start fake backend: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// startGateway parses cfg (YAML), starts a gateway with opts on
// 127.0.0.1:0 and shuts it down (bounded) when the test ends, failing the
// test when that shutdown errs or takes longer than 6s.
func startGateway(t *testing.T, cfg string, opts ...vmcp.Option) *vmcp.Gateway {
	t.Helper()
	g := startGatewayShutByTest(t, cfg, opts...)
	// Runs before startGatewayShutByTest's cleanup (LIFO), whose Shutdown
	// is then a no-op.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		if err := g.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("shutdown took %v", d)
		}
	})
	return g
}

// startGatewayShutByTest parses cfg (YAML) and starts a gateway with opts
// on 127.0.0.1:0, for a test that calls (and measures) Shutdown itself:
// the cleanup only shuts it down, bounded, if the test ended before doing
// so.
func startGatewayShutByTest(t *testing.T, cfg string, opts ...vmcp.Option) *vmcp.Gateway {
	t.Helper()
	c, err := vmcp.ParseConfig([]byte(cfg), t.Name()+".yaml")
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	g, err := vmcp.New(c, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(ctxT(t, 5*time.Second), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	shutdownOnCleanup(t, g)
	return g
}

// shutdownOnCleanup shuts g down (bounded) when the test ends, also when it
// fails before its own Shutdown call (a second Shutdown is a no-op).
func shutdownOnCleanup(t *testing.T, g *vmcp.Gateway) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
}

// connect opens an MCP client to the gateway: legacy (2025-11-25,
// sessionful) or modern (2026-07-28, stateless).
func connect(t *testing.T, url string, modern bool) *client.Client {
	t.Helper()
	c, err := tryConnect(url, modern)
	if err != nil {
		t.Fatalf("connect (modern=%v): %v", modern, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func tryConnect(url string, modern bool) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPTimeout(30*time.Second), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	var opts []client.ClientOption
	if modern {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_PROTOCOL_VERSION))
	} else {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	c := client.NewClient(tr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "vmcp-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, time.Duration) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	start := time.Now()
	res, err := c.CallTool(ctxT(t, 20*time.Second), req)
	d := time.Since(start)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res, d
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func toolNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(ctxT(t, 10*time.Second), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func metaOf(r *mcp.CallToolResult) (string, string) {
	if r.Meta == nil {
		return "", ""
	}
	return fmt.Sprint(r.Meta.AdditionalFields["vmcp/backend"]), fmt.Sprint(r.Meta.AdditionalFields["vmcp/errorKind"])
}

// gwConfig renders a gateway config for fake backends.
func gwConfig(extra string, backends ...*fakebackends.Backend) string {
	var b strings.Builder
	b.WriteString("name: test\nbackends:\n")
	for _, fb := range backends {
		s := fb.Script()
		fmt.Fprintf(&b, "  - {name: %s, url: %q, transport: %s}\n", s.Name, fb.URL(), s.Transport)
	}
	b.WriteString(extra)
	return b.String()
}

func countTool(recs []fakebackends.RequestRecord, method, tool string) int {
	n := 0
	for _, r := range recs {
		if r.Method == method && (tool == "" || r.Tool == tool) {
			n++
		}
	}
	return n
}

// atOnceBound bounds a call that must fail without waiting for a timeout
// (refused, reset, an error status, a bad answer, an open circuit). Each
// such test also checks the error kind, which says the call did not time
// out; the bound only catches a hang. On a loaded machine (-race, load
// average 15 on 2 cores) these calls took over a second, so they are
// logged, not held to tight figures.
const atOnceBound = 5 * time.Second
