package vmcp

import (
	"context"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// SessionObserver is told when client sessions open and close; keepalive
// and per-session metrics hook in here. Calls must not block.
type SessionObserver interface {
	SessionOpened(s *Session)
	SessionClosed(s *Session)
}

// WithSessionObserver registers a session observer.
func WithSessionObserver(o SessionObserver) Option {
	return func(opts *options) { opts.sessionObserver = o }
}

// BackendHandle is one backend within one session: what keepalive probes
// and health checks use. Its requests go through the same path as client
// calls (deadline, connection race, state, re-initialization, observer,
// gate).
type BackendHandle struct {
	m *member
}

// Backend returns the handle of backend name in the session; ok is false
// for an unknown backend or one that failed when the session started.
func (s *Session) Backend(name string) (*BackendHandle, bool) {
	m, ok := s.members[name]
	if !ok || !s.connectedAtStart(name) {
		return nil, false
	}
	return &BackendHandle{m: m}, true
}

func (s *Session) connectedAtStart(name string) bool {
	m := s.members[name]
	if m == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.startedOK
}

// Name returns the backend's configured name.
func (h *BackendHandle) Name() string { return h.m.backend.Name }

// Status returns the backend's state in the session.
func (h *BackendHandle) Status() MemberStatus { return h.m.status() }

// Ping sends ping (a no-op on a stateless backend connection).
func (h *BackendHandle) Ping(ctx context.Context) error {
	return asError(h.m.do(ctx, "ping", h.m.d.cfg.Timeouts.Call, func(ctx context.Context, c *client.Client) error {
		return c.Ping(ctx)
	}))
}

// ListTools lists the backend's tools (a probe that works on stateless
// backends).
func (h *BackendHandle) ListTools(ctx context.Context) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	err := h.m.do(ctx, "tools/list", h.m.d.cfg.Timeouts.List, func(ctx context.Context, c *client.Client) error {
		r, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err == nil {
			tools = r.Tools
		}
		return err
	})
	return tools, asError(err)
}

// CallTool calls the backend's tool by its original name with no
// arguments. A tool result with isError counts as a failure here.
func (h *BackendHandle) CallTool(ctx context.Context, name string) error {
	var res *mcp.CallToolResult
	be := h.m.do(ctx, "tools/call", h.m.d.cfg.Timeouts.Call, func(ctx context.Context, c *client.Client) error {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		var err error
		res, err = c.CallTool(ctx, req)
		return err
	})
	if be != nil {
		return be
	}
	if res != nil && res.IsError {
		return &toolError{name: name}
	}
	return nil
}

type toolError struct{ name string }

func (e *toolError) Error() string { return "tool " + e.name + " returned isError" }

// HasTool reports whether the backend listed the tool (original name) when
// the session started.
func (h *BackendHandle) HasTool(name string) bool {
	for _, t := range h.m.viewOf().Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Exclusive runs fn when no re-initialization of this backend session is
// in flight (waiting for one to finish first), so a probe never overlaps
// one that is already running.
func (h *BackendHandle) Exclusive(ctx context.Context, fn func(ctx context.Context) error) error {
	h.m.mu.Lock()
	fl := h.m.reinit
	h.m.mu.Unlock()
	if fl != nil {
		select {
		case <-fl.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return fn(ctx)
}

func asError(be *BackendError) error {
	if be == nil {
		return nil
	}
	return be
}

// Tools returns the session's aggregated tools (exposed names).
func (s *Session) Tools() []mcp.Tool { return append([]mcp.Tool(nil), s.agg.Load().Tools...) }

// CallTool calls one of the session's tools by its exposed name, with all
// the error behaviour of a client's tools/call (a backend failure is an
// isError result naming the backend). An unknown name returns ok false.
func (s *Session) CallTool(ctx context.Context, name string, args map[string]any) (res *mcp.CallToolResult, ok bool) {
	r, found := s.agg.Load().ToolRoutes[name]
	if !found {
		return nil, false
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, _ = toolHandler(s, r)(ctx, req)
	return res, true
}
