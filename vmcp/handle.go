package vmcp

import (
	"context"
	"fmt"
	"slices"

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
	if !ok {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.startedOK {
		return nil, false
	}
	return &BackendHandle{m: m}, true
}

// Name returns the backend's configured name.
func (h *BackendHandle) Name() string { return h.m.backend.Name }

// Status returns the backend's state in the session.
func (h *BackendHandle) Status() MemberStatus { return h.m.status() }

// Ping sends ping (a no-op on a stateless backend connection).
func (h *BackendHandle) Ping(ctx context.Context) error {
	return asError(h.m.do(ctx, "ping", h.m.timeouts.Call, func(ctx context.Context, c *client.Client) error {
		if v := c.ProtocolVersion(); mcp.IsModernProtocol(v) {
			// mcp-go's Ping succeeds without sending anything on a
			// stateless connection: a keepalive that never reaches the
			// backend must not count as alive.
			return fmt.Errorf("%w (protocol %s): use keepalive.method: tool:<name>", errPingStateless, v)
		}
		return c.Ping(ctx)
	}))
}

// ListTools lists the backend's tools (a probe that works on stateless
// backends).
func (h *BackendHandle) ListTools(ctx context.Context) ([]mcp.Tool, error) {
	var tools []mcp.Tool
	err := h.m.do(ctx, "tools/list", h.m.timeouts.List, func(ctx context.Context, c *client.Client) error {
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
	be := h.m.do(ctx, "tools/call", h.m.timeouts.Call, func(ctx context.Context, c *client.Client) (err error) {
		res, err = c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name}})
		return err
	})
	if be != nil {
		return be
	}
	if res != nil && res.IsError {
		return fmt.Errorf("tool %s returned isError", name)
	}
	return nil
}

// HasTool reports whether the backend listed the tool (original name) when
// the session started.
func (h *BackendHandle) HasTool(name string) bool {
	return slices.ContainsFunc(h.m.viewOf().Tools, func(t mcp.Tool) bool { return t.Name == name })
}

// Exclusive runs fn (a keepalive probe) so that it never overlaps a
// re-initialization of this backend session: it waits for one in flight to
// finish, and a re-initialization that starts while fn runs waits for fn
// to return before it dials (bounded by the probe's timeout). Both sides
// decide under the member's lock, so there is no window between the check
// and the run. If the probe itself needs a re-initialization (its
// connection died or its backend session expired), it waits for it like
// any caller and stops holding the session meanwhile; it holds it again for
// its retry when no other re-initialization has started.
func (h *BackendHandle) Exclusive(ctx context.Context, fn func(ctx context.Context) error) error {
	m := h.m
	for {
		m.mu.Lock()
		var wait <-chan struct{}
		switch {
		case m.reinit != nil:
			wait = m.reinit.done
		case m.probe != nil && m.probe.held != nil:
			// Another probe of the same backend session (keepalive runs
			// one per session; this only guards misuse).
			wait = m.probe.held
		}
		if wait != nil {
			m.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		p := &probeRun{m: m, held: make(chan struct{})}
		m.probe = p
		m.mu.Unlock()
		defer func() {
			m.mu.Lock()
			p.release()
			if m.probe == p {
				m.probe = nil
			}
			m.mu.Unlock()
		}()
		return fn(context.WithValue(ctx, probeRunKey{}, p))
	}
}

// probeRun is a keepalive probe running under Exclusive. Guarded by its
// member's mu.
type probeRun struct {
	m *member
	// held is closed when the probe stops holding the backend session; nil
	// while it does not hold it.
	held chan struct{}
}

func (p *probeRun) release() {
	if p.held != nil {
		close(p.held)
		p.held = nil
	}
}

type probeRunKey struct{}

// probeOf returns the probe running in ctx if it is m's.
func (m *member) probeOf(ctx context.Context) *probeRun {
	if p, _ := ctx.Value(probeRunKey{}).(*probeRun); p != nil && p.m == m {
		return p
	}
	return nil
}

// probeToAwait returns what a re-initialization about to start for a
// caller with ctx must wait for before it dials: the keepalive probe
// holding the backend session, unless that probe is the caller. Called
// with m.mu held.
func (m *member) probeToAwait(ctx context.Context) <-chan struct{} {
	if m.probe == nil || m.probe.held == nil || m.probeOf(ctx) == m.probe {
		return nil
	}
	return m.probe.held
}

// probeWaitsForReinit is called, with m.mu held, when a caller with ctx is
// about to wait for a re-initialization: a probe stops holding the
// session, so the re-initialization can go ahead.
func (m *member) probeWaitsForReinit(ctx context.Context) {
	if p := m.probeOf(ctx); p != nil {
		p.release()
	}
}

// probeResumes is called, with m.mu held, when a caller with ctx got the
// re-initialized connection: a probe holds the session again for its
// retry, unless another re-initialization has already started.
func (m *member) probeResumes(ctx context.Context) {
	if p := m.probeOf(ctx); p != nil && p.held == nil && m.reinit == nil && m.probe == p {
		p.held = make(chan struct{})
	}
}

// awaitProbe blocks a re-initialization until the probe it must wait for
// stops holding the backend session, or the owner closes.
func (m *member) awaitProbe(fl *flight) {
	if fl.after == nil {
		return
	}
	select {
	case <-fl.after:
	case <-m.ctx.Done():
	}
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
	res, _ = toolHandler(s, r)(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	return res, true
}
