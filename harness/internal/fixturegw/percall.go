package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// perCall is fixture i's gateway, written the way a public gateway is
// (not the reference behind a front): it takes streamable-HTTP backends
// only, offers tools only, and opens a fresh backend session for every
// call (initialize, tools/call, close). A session's opening is bounded
// by the config's timeouts.initialize, its tools/call by timeouts.call.
// Its backend client (mcp-go's) takes only an answer carrying the
// request's id (answerid.go). An initialize that fails is wrapped naming
// the backend ("backend beta: initialize: ..."); a tools/call error
// passes through as the backend client words it ("transport error:
// request failed with status 403: ", "context deadline exceeded"),
// naming no backend.
type perCall struct {
	backends map[string]config.Backend
	timeouts config.Timeouts
	perCallOptions
	srv     *server.MCPServer
	handler http.Handler
}

// perCallOptions are fixture i's variants.
type perCallOptions struct {
	// initUnnamed: an initialize error passes through naming no backend
	// (--init-unnamed: fails the initialize-path naming checks).
	initUnnamed bool
	// initRetry: a call whose initialize fails retries it every 200 ms
	// for as long as the client waits, neither timeout bounding it
	// (--init-retry: fails the initialize-path bounds).
	initRetry bool
	// discoverFirst: the backend client speaks 2026-07-28, so each
	// backend session opens with server/discover, not initialize
	// (--discover-first, fixture q). Its errors are named as
	// initialize's are.
	discoverFirst bool
}

// perCallInfo is the client info fixture i gives its backends.
var perCallInfo = mcp.Implementation{Name: "fixturegw-per-call", Version: "0.1.0"}

// newPerCall lists every backend's tools once (a session of its own,
// closed after) and serves them as "<prefix><tool>", prefix being
// prefixFormat with {backend} replaced. A backend that is not
// streamable-HTTP is refused.
func newPerCall(ctx context.Context, cfg *config.Config, prefixFormat string, opts perCallOptions) (*perCall, error) {
	p := &perCall{backends: map[string]config.Backend{}, timeouts: cfg.Timeouts, perCallOptions: opts}
	p.srv = server.NewMCPServer(cfg.Name, "0.1.0", server.WithToolCapabilities(false), server.WithRecovery())
	for _, b := range cfg.Backends {
		if b.Transport != config.TransportStreamableHTTP {
			return nil, fmt.Errorf("backend %s: transport %s not supported (streamable-http only)", b.Name, b.Transport)
		}
		p.backends[b.Name] = b
		tools, err := p.listTools(ctx, b)
		if err != nil {
			return nil, err
		}
		prefix := strings.ReplaceAll(prefixFormat, "{backend}", b.Name)
		for _, t := range tools {
			own := t.Name
			t.Name = prefix + own
			p.srv.AddTool(t, p.callHandler(b, own))
		}
	}
	p.handler = server.NewStreamableHTTPServer(p.srv)
	return p, nil
}

// session opens a fresh session with backend b: the returned client is
// initialized, and the caller closes it. Its error names the backend.
func (p *perCall) session(ctx context.Context, b config.Backend) (*client.Client, error) {
	hc := &http.Client{Transport: newAnswerIDs(http.DefaultTransport)}
	tr, err := transport.NewStreamableHTTP(b.URL, transport.WithHTTPHeaders(b.Headers), transport.WithHTTPBasicClient(hc))
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", b.Name, err)
	}
	// The sessionful revision: every session starts with an initialize;
	// with discoverFirst the stateless one: server/discover.
	protocol, opts := mcp.LATEST_LEGACY_PROTOCOL_VERSION, []client.ClientOption{client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION)}
	if p.discoverFirst {
		protocol, opts = mcp.LATEST_PROTOCOL_VERSION, nil
	}
	c := client.NewClient(tr, opts...)
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("backend %s: start: %w", b.Name, err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocol
	req.Params.ClientInfo = perCallInfo
	if _, err := c.Initialize(ctx, req); err != nil {
		_ = c.Close()
		if p.initUnnamed {
			return nil, err
		}
		return nil, fmt.Errorf("backend %s: initialize: %w", b.Name, err)
	}
	return c, nil
}

// callSession is session for a call, bounded by timeouts.initialize;
// with initRetry, unbounded, a failed initialize is tried again every
// 200 ms until ctx (the client's request) ends.
func (p *perCall) callSession(ctx context.Context, b config.Backend) (*client.Client, error) {
	if !p.initRetry {
		ctx, cancel := context.WithTimeout(ctx, p.timeouts.Initialize)
		defer cancel()
		return p.session(ctx, b)
	}
	for {
		c, err := p.session(ctx, b)
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listTools lists backend b's tools in a session of its own, bounded by
// the config's initialize and list timeouts.
func (p *perCall) listTools(ctx context.Context, b config.Backend) ([]mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeouts.Initialize+p.timeouts.List)
	defer cancel()
	c, err := p.session(ctx, b)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("backend %s: tools/list: %w", b.Name, err)
	}
	return res.Tools, nil
}

// callHandler calls tool own of backend b in a session opened for this
// call alone, closed after; the tools/call is bounded by timeouts.call.
func (p *perCall) callHandler(b config.Backend, own string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, err := p.callSession(ctx, b)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		out := mcp.CallToolRequest{}
		out.Params.Name = own
		out.Params.Arguments = req.Params.Arguments
		out.Params.Meta = ownMeta(req.Params.Meta)
		ctx, cancel := context.WithTimeout(ctx, p.timeouts.Call)
		defer cancel()
		return c.CallTool(ctx, out)
	}
}

// ownMeta is the client's _meta (its marker) without the protocol's keys
// (io.modelcontextprotocol/...), which describe the client's revision,
// not the backend session's.
func ownMeta(m *mcp.Meta) *mcp.Meta {
	if m == nil {
		return nil
	}
	out := &mcp.Meta{AdditionalFields: map[string]any{}}
	for k, v := range m.AdditionalFields {
		if !strings.HasPrefix(k, "io.modelcontextprotocol/") {
			out.AdditionalFields[k] = v
		}
	}
	return out
}

// ServeHTTP serves the MCP endpoint.
func (p *perCall) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }
