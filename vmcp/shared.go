package vmcp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// A legacy session still opens its own backend session per backend, but
// it takes the backend's lists from the gateway's catalogue session of
// that backend instead of listing them again: one long-lived backend
// session per backend, owned by the gateway, whose lists (checked as a
// session's are) every session opened while it holds shares. The session
// answers initialize once the catalogue session is confirmed and opens
// its own backend session in the background (member.openLater). The
// catalogue session holds only while nothing says the backend changed:
//
//   - a session open pings it (an answered ping vouches for it for
//     catalogueFresh): a failure (a restarted backend answers 404 for it,
//     a dead one does not answer) drops it;
//   - each session's own backend session must announce in initialize
//     exactly what the catalogue session did (revision, serverInfo,
//     capabilities, instructions), else it is dropped;
//   - a list_changed notification reaching the catalogue session drops
//     it, and so does any member session being re-initialized (a 404, a
//     dead stream), any member's failed open (not one cut by its session's
//     end), the backend turning unhealthy or its circuit opening.
//
// A dropped catalogue session is closed; the next session open lists on
// its own backend session, as before, while a new catalogue session
// opens and lists beside it. Only streamable-HTTP backends on the
// sessionful revision take part (stdio would cost a process, SSE shares
// one stream per session).

// catalogueSession is one backend's catalogue session and its lists.
type catalogueSession struct {
	conn     *backend.Conn
	view     backendView
	answered atomic.Int64 // unix nanoseconds of its last answered ping
}

// catalogueFresh is how long a catalogue session's answered ping vouches
// for it: sessions opening within it take the lists without a ping of
// their own. It bounds how stale a session's lists can be after a restart
// that nothing else reports, as a session opened that long before the
// restart would be.
const catalogueFresh = 250 * time.Millisecond

// confirm reports whether the catalogue session is alive: answered a ping
// within catalogueFresh, or answers one now.
func (cs *catalogueSession) confirm(ctx context.Context, timeout time.Duration) bool {
	if !cs.conn.Alive() {
		return false
	}
	if time.Since(time.Unix(0, cs.answered.Load())) < catalogueFresh {
		return true
	}
	if cs.conn.Invoke(ctx, "ping", timeout, func(ctx context.Context) error { return cs.conn.Client().Ping(ctx) }) != nil {
		return false
	}
	cs.answered.Store(time.Now().UnixNano())
	return true
}

// sharedCatalogues holds the catalogue session of each backend.
type sharedCatalogues struct {
	g       *Gateway
	mu      sync.Mutex
	held    map[string]*catalogueSession
	opening map[string]bool // a catalogue session is being opened
	closed  bool
	wg      sync.WaitGroup // closing catalogue sessions
}

func newSharedCatalogues(g *Gateway) *sharedCatalogues {
	return &sharedCatalogues{g: g, held: map[string]*catalogueSession{}, opening: map[string]bool{}}
}

// sharable reports whether backend b's catalogue can be shared: a
// streamable-HTTP backend whose keepalive does not ping. A catalogue
// session is confirmed by ping, and on a backend kept alive by ping those
// pings would be told from the keepalive's by nobody watching the
// backend: its keepalive counters would no longer match the pings it
// received (the keepalive scenario's metrics check).
func sharable(b config.Backend) bool {
	return b.Transport == config.TransportStreamableHTTP && b.Keepalive.Method != "ping"
}

// sharableConn reports whether connection c takes part: the sessionful
// revision, with an initialize result to compare.
func sharableConn(c *backend.Conn) bool {
	return !mcp.IsModernProtocol(c.Protocol()) && c.Announced() != "" && c.SessionID() != ""
}

// get returns backend name's catalogue session, nil when none is held.
func (sc *sharedCatalogues) get(name string) *catalogueSession {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.held[name]
}

// drop closes backend name's catalogue session, if cs is still the one
// held (nil: whichever is held).
func (sc *sharedCatalogues) drop(name string, cs *catalogueSession) {
	sc.mu.Lock()
	cur := sc.held[name]
	if cur == nil || (cs != nil && cur != cs) {
		sc.mu.Unlock()
		return
	}
	delete(sc.held, name)
	sc.wg.Go(func() { <-cur.conn.Close() })
	sc.mu.Unlock()
	sc.g.logger.Debug("catalogue session dropped", "backend", name)
}

// invalidate drops backend name's catalogue session whatever it is.
func (sc *sharedCatalogues) invalidate(name string) {
	if sc != nil {
		sc.drop(name, nil)
	}
}

// startOpening reports whether the caller should open backend name's
// catalogue session (none is held or being opened); it then must call
// finishOpening.
func (sc *sharedCatalogues) startOpening(name string) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed || sc.held[name] != nil || sc.opening[name] {
		return false
	}
	sc.opening[name] = true
	return true
}

// finishOpening holds cs (nil when opening failed) as backend name's
// catalogue session, unless the gateway is closing.
func (sc *sharedCatalogues) finishOpening(name string, cs *catalogueSession) {
	sc.mu.Lock()
	delete(sc.opening, name)
	closed := sc.closed
	if cs != nil && !closed {
		sc.held[name] = cs
	}
	sc.mu.Unlock()
	if cs != nil && closed {
		<-cs.conn.Close() // bounded by the close timeout
	}
}

// close closes every catalogue session and waits until they are closed.
func (sc *sharedCatalogues) close() {
	sc.mu.Lock()
	sc.closed = true
	for name, cs := range sc.held {
		sc.wg.Go(func() { <-cs.conn.Close() })
		delete(sc.held, name)
	}
	sc.mu.Unlock()
	sc.wg.Wait()
}

// openCatalogue opens and lists a catalogue session for backend b within
// ctx; nil when any step fails (the session open that asked lists on its
// own connection all the same).
func (g *Gateway) openCatalogue(ctx context.Context, b config.Backend) *catalogueSession {
	c, be := g.dialer.Dial(ctx, b, true)
	if be != nil {
		return nil
	}
	if !sharableConn(c) {
		<-c.Close()
		return nil
	}
	cs := &catalogueSession{conn: c}
	c.Client().OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged, mcp.MethodNotificationResourcesListChanged,
			mcp.MethodNotificationPromptsListChanged:
			g.shared.drop(b.Name, cs)
		}
	})
	view, be := g.listView(ctx, b.Name, c)
	if be != nil {
		<-c.Close()
		return nil
	}
	cs.view = view
	return cs
}

// connectShared is connectMember for a sharable backend of a legacy
// session. When a catalogue session is held and answers a ping, the
// member takes its lists and opens its own backend session in the
// background (calls wait for it: member.current), so the session answers
// after one round trip; that backend session must announce what the
// catalogue session did, else the catalogue session is dropped (for the
// sessions that follow). Otherwise the member opens and lists as before
// while a new catalogue session opens beside it.
func (g *Gateway) connectShared(ctx context.Context, m *member) *BackendError {
	name := m.backend.Name
	if cs := g.shared.get(name); cs != nil {
		if cs.confirm(ctx, g.cfg.Timeouts.List) {
			m.openLater(cs)
			return nil
		}
		g.shared.drop(name, cs)
	}
	var fresh *catalogueSession
	var wg sync.WaitGroup
	opening := g.shared.startOpening(name)
	if opening {
		wg.Go(func() { fresh = g.openCatalogue(ctx, m.backend) })
	}
	c, be := g.dialer.Dial(ctx, m.backend, m.preferLegacy)
	if be == nil {
		be = g.listMember(ctx, m, c)
	}
	wg.Wait()
	if be != nil {
		g.shared.invalidate(name) // the backend is in trouble: share nothing listed before
	}
	if fresh != nil && (be != nil || !sharableConn(c) || c.Announced() != fresh.conn.Announced()) {
		<-fresh.conn.Close() // bounded by the close timeout
		fresh = nil
	}
	if opening {
		g.shared.finishOpening(name, fresh)
	}
	return be
}

// openLater gives the member catalogue session cs's lists and opens its
// own backend session in the background, as a re-initialization that
// every call waits for (it counts as none).
func (m *member) openLater(cs *catalogueSession) {
	fl := &flight{done: make(chan struct{}), opened: func(c *backend.Conn, be *BackendError) {
		if be != nil {
			m.record(be)
			if be.Kind != KindClosed && be.Kind != KindCanceled && m.ctx.Err() == nil {
				m.shared.invalidate(m.backend.Name) // not the session's end: the backend is in trouble
			}
			return
		}
		if !sharableConn(c) || c.Announced() != cs.conn.Announced() {
			m.shared.drop(m.backend.Name, cs)
		}
	}}
	m.mu.Lock()
	m.view, m.listed, m.reinit = cs.view, true, fl
	m.mu.Unlock()
	m.wg.Go(func() { m.redial(fl) })
}

// listMember lists what the backend offers on the member's own
// connection c and installs both.
func (g *Gateway) listMember(ctx context.Context, m *member, c *backend.Conn) *BackendError {
	view, be := g.listView(ctx, m.backend.Name, c)
	if be != nil {
		m.wg.Go(func() { <-c.Close() })
		return be
	}
	m.conn, m.view, m.listed = c, view, true
	return nil
}
