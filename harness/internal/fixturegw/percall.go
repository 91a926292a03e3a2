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
// call (initialize, tools/call, close). It has no call timeout of its
// own: a call lasts as long as the client's request. An initialize that
// fails is wrapped naming the backend ("backend beta: initialize: ...");
// a tools/call error passes through as the backend client words it
// ("transport error: request failed with status 403: "), naming no
// backend.
type perCall struct {
	backends map[string]config.Backend
	srv      *server.MCPServer
	handler  http.Handler
}

// perCallInfo is the client info fixture i gives its backends.
var perCallInfo = mcp.Implementation{Name: "fixturegw-per-call", Version: "0.1.0"}

// newPerCall lists every backend's tools once (a session of its own,
// closed after) and serves them as "<prefix><tool>", prefix being
// prefixFormat with {backend} replaced. A backend that is not
// streamable-HTTP is refused.
func newPerCall(ctx context.Context, cfg *config.Config, prefixFormat string) (*perCall, error) {
	p := &perCall{backends: map[string]config.Backend{}}
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
	tr, err := transport.NewStreamableHTTP(b.URL, transport.WithHTTPHeaders(b.Headers))
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", b.Name, err)
	}
	// The sessionful revision: every session starts with an initialize.
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("backend %s: start: %w", b.Name, err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = perCallInfo
	if _, err := c.Initialize(ctx, req); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("backend %s: initialize: %w", b.Name, err)
	}
	return c, nil
}

// listTools lists backend b's tools in a session of its own, bounded by
// the config's initialize timeout.
func (p *perCall) listTools(ctx context.Context, b config.Backend) ([]mcp.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, max(cfgInitialize, 5*time.Second))
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

// cfgInitialize bounds the start-up listing (no call is bounded).
const cfgInitialize = 10 * time.Second

// callHandler calls tool own of backend b in a session opened for this
// call alone, closed after. No deadline but the client's request.
func (p *perCall) callHandler(b config.Backend, own string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c, err := p.session(ctx, b)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		out := mcp.CallToolRequest{}
		out.Params.Name = own
		out.Params.Arguments = req.Params.Arguments
		out.Params.Meta = ownMeta(req.Params.Meta)
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
