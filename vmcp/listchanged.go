package vmcp

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/breaker"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// With `notifications.listChanged: true`, a backend that becomes
// unavailable (health unhealthy or unauthenticated, circuit open) leaves the
// view of every live client session, and comes back when it is available
// again; each change is announced with notifications/tools/list_changed.
// A backend that was left out when the session started joins it then too
// (it is connected first).

// unavailable reports whether a backend is unavailable now (health
// unhealthy or unauthenticated while the monitor runs, or circuit open) and
// why, in the words of the gate's refusal.
func (r *resilience) unavailable(name string) (string, bool) {
	br, ok := r.backends[name]
	if !ok {
		return "", false
	}
	if r.cfg.Health.Enabled {
		if st := br.tracker.Status().State; !st.Usable() {
			return string(st) + " (health check)", true
		}
	}
	if br.breaker != nil && br.breaker.State() == breaker.Open {
		return "circuit open", true
	}
	return "", false
}

// availabilityMayHaveChanged is called after a health or circuit
// transition. Live sessions are updated by one worker per backend (owned by
// r.bg, bounded by the gateway's life): transitions only mark the backend
// dirty, and the worker reads the backend's availability afresh each time
// it applies it, so updates never apply out of order and the last one
// always reflects the latest state.
func (r *resilience) availabilityMayHaveChanged(name string) {
	if !r.cfg.Notifications.ListChanged {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	u := r.viewUpd[name]
	u.dirty = true
	if u.running {
		return // the running worker sees the mark
	}
	u.running = true
	r.bg.Go(func() { r.updateViews(name, u) })
}

// viewUpdater is one backend's view worker state (running and dirty
// guarded by r.mu; avail and known are the worker's own).
type viewUpdater struct {
	running bool // a worker owns the backend's updates
	dirty   bool // a transition happened since the worker last looked
	avail   bool // the availability the last worker round read
	known   bool // avail was read
}

// updateViews applies the backend's current availability to every live
// session until no transition is pending.
func (r *resilience) updateViews(name string, u *viewUpdater) {
	for {
		r.mu.Lock()
		if !u.dirty || r.stopped {
			u.running = false
			r.mu.Unlock()
			return
		}
		u.dirty = false
		r.mu.Unlock()
		// Read after clearing the mark: a transition from here on marks it
		// again and is applied on the next round.
		_, down := r.unavailable(name)
		prev, known := u.avail, u.known
		u.avail, u.known = !down, true
		if (known && prev == u.avail) || (!known && u.avail) {
			continue
		}
		r.g.setBackendAvailable(name, u.avail)
	}
}

// setBackendAvailable updates every live session's view.
func (g *Gateway) setBackendAvailable(name string, avail bool) {
	g.mu.Lock()
	sessions := slices.Collect(maps.Values(g.sessions))
	g.mu.Unlock()
	for _, s := range sessions {
		if g.ctx.Err() != nil {
			return
		}
		s.setBackendAvailable(name, avail)
	}
}

// setBackendAvailable hides or shows one backend in the session's view and
// tells the client when the view changed.
func (s *Session) setBackendAvailable(name string, avail bool) {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	m, ok := s.members[name]
	if !ok || s.mcpSess == nil || s.ctx.Err() != nil {
		return
	}
	if !avail {
		if s.hidden[name] {
			return
		}
		s.hidden[name] = true
	} else {
		if !m.hasView() {
			if !s.connectLate(m) {
				return
			}
			s.g.res.MemberConnected(s, name)
		}
		if !s.hidden[name] && s.inView(name) {
			return
		}
		delete(s.hidden, name)
	}
	agg := buildAggregate(s.g.cfg.Aggregation, s.memberViews(false))
	s.agg.Store(agg)
	s.g.applyView(s.mcpSess, s, agg) // the optimizer releases the previous view itself
	if err := s.g.mcp.SendNotificationToSpecificClient(s.id, string(mcp.MethodNotificationToolsListChanged), nil); err != nil {
		s.g.logger.Debug("tools/list_changed not delivered", "session", s.id, "err", err)
	}
	s.g.logger.Info("session view changed", "session", s.id, "backend", name, "available", avail, "tools", len(agg.Tools))
}

// hiddenTool reports the backend that the exposed tool name belongs to
// when that backend is left out of the session's view while unavailable:
// the tool is then not unknown, its backend is down, and the caller is
// told which. (Only on a miss: it aggregates every member's view.)
func (s *Session) hiddenTool(name string) (string, bool) {
	s.viewMu.Lock()
	defer s.viewMu.Unlock()
	if len(s.hidden) == 0 {
		return "", false
	}
	r, ok := buildAggregate(s.g.cfg.Aggregation, s.memberViews(true)).ToolRoutes[name]
	if !ok || !s.hidden[r.Backend] {
		return "", false
	}
	return r.Backend, true
}

// downTool reports the backend a tool name the view does not route
// belongs to, and why it is out, when that backend is not in the view
// because it is unavailable: hidden while unhealthy (hiddenTool), or never
// connected in this session (its opening failed) and the name carries its
// prefix. A call of such a tool is answered with an error naming the
// backend, not an anonymous "tool not found".
func (s *Session) downTool(name string) (down downBackend, ok bool) {
	if b, hidden := s.hiddenTool(name); hidden {
		return downBackend{Name: b, Hidden: true, Err: s.memberError(b, "unavailable")}, true
	}
	b, ok := prefixOwner(s.g.cfg.Aggregation, name, s.order, func(n string) bool { return !s.members[n].hasView() })
	if !ok {
		return downBackend{}, false
	}
	return downBackend{Name: b, Err: s.memberError(b, "not connected in this session")}, true
}

// downBackend is what downTool found: the backend out of the session's
// view, whether it is hidden while unavailable (else it never connected
// in the session), and the error a call of its tool gets.
type downBackend struct {
	Name   string
	Hidden bool
	Err    *BackendError
}

// prefixOwner is the first of backends whose tool prefix the exposed
// name carries, among those out says are out of the view, when tools are
// prefixed (else none: a name then says nothing of its backend).
func prefixOwner(a config.Aggregation, name string, backends []string, out func(string) bool) (string, bool) {
	if a.ConflictResolution != config.ConflictPrefix {
		return "", false
	}
	for _, b := range backends {
		if out(b) && strings.HasPrefix(name, prefixed(a.PrefixFormat, b, "")) {
			return b, true
		}
	}
	return "", false
}

// memberError is the error a call of backend name's tool gets while the
// backend is out of the session's view: the member's last error, or what
// says why it is out.
func (s *Session) memberError(name, why string) *BackendError {
	st := s.members[name].status()
	be := &BackendError{Backend: name, Op: "tools/call", Kind: KindClosed, Cause: why}
	if st.LastError != "" {
		be.Cause = why + ": " + st.LastError
	}
	if st.LastErrorKind != "" {
		be.Kind = st.LastErrorKind
	}
	return be
}

// memberViews returns the listed views of the session's connected
// backends, the hidden ones only when withHidden is set. Called with
// s.viewMu held.
func (s *Session) memberViews(withHidden bool) map[string]backendView {
	views := map[string]backendView{}
	for _, n := range s.order {
		if m := s.members[n]; (withHidden || !s.hidden[n]) && m.hasView() {
			views[n] = m.viewOf()
		}
	}
	return views
}

// inView reports whether the current view routes to the backend.
func (s *Session) inView(name string) bool {
	for _, r := range s.agg.Load().ToolRoutes {
		if r.Backend == name {
			return true
		}
	}
	return false
}

// connectLate connects a backend that was left out when the session
// started, bounded by the initialize timeout.
func (s *Session) connectLate(m *member) bool {
	ctx, cancel := context.WithTimeout(s.ctx, s.g.cfg.Timeouts.Initialize)
	defer cancel()
	c, be := s.g.dialer.Dial(ctx, m.backend, true)
	if be != nil {
		return false
	}
	view, be := s.g.listView(ctx, m.backend.Name, c)
	// The connections given up on here are closed before returning (the
	// close timeout bounds it): this runs on the gateway's list-changed
	// worker, not on a goroutine the session's WaitGroup counts, so adding
	// to that WaitGroup here could race Session.Close waiting on it.
	if be != nil {
		<-c.Close()
		return false
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		<-c.Close()
		return false
	}
	defer m.mu.Unlock()
	m.conn, m.view, m.listed, m.state, m.startedOK, m.lastOKAt = c, view, true, StateConnected, true, time.Now()
	return true
}

// hasView reports whether the member has connected (now or at start) and
// listed what it offers (or took the catalogue's lists: shared.go).
func (m *member) hasView() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.listed
}

// viewOf returns the member's listed view.
func (m *member) viewOf() backendView {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view
}
