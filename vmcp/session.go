package vmcp

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
)

// caller routes a request to one backend of a view's owner: a legacy
// client session or the shared pool.
type caller interface {
	call(ctx context.Context, backend, op string, fn func(context.Context, *client.Client) error) *BackendError
}

// Session is one sessionful (2025-11-25) client session. It owns one
// backend connection per backend that answered when it started.
type Session struct {
	id             string
	g              *Gateway
	clientProtocol string
	created        time.Time
	ctx            context.Context
	cancel         context.CancelCauseFunc
	wg             sync.WaitGroup
	members        map[string]*member
	order          []string                  // backend names in configuration order
	agg            atomic.Pointer[aggregate] // swapped when backends leave or rejoin (listchanged.go)
	viewMu         sync.Mutex                // serialises view changes
	mcpSess        server.ClientSession      // the mcp-go session the view is installed on
	hidden         map[string]bool           // backends left out of the view while unavailable
	lastActive     atomic.Int64              // unix nanoseconds of the last client request
	passing        sync.Map                  // client request id → *cancelSlot of a pass-through call (passthrough.go)
	closeOnce      sync.Once
	closed         chan struct{}
}

// openSession connects every backend in parallel, bounded by the
// initialize timeout, and builds the session's view. It fails, naming every
// backend, when none answers.
func (g *Gateway) openSession(reqCtx context.Context, id, clientProtocol string) (*Session, error) {
	sctx, cancel := context.WithCancelCause(g.ctx)
	s := &Session{
		id:             id,
		g:              g,
		clientProtocol: clientProtocol,
		created:        time.Now(),
		ctx:            sctx,
		cancel:         cancel,
		members:        map[string]*member{},
		hidden:         map[string]bool{},
		closed:         make(chan struct{}),
	}
	// Opening ends early if the client goes away or the session closes.
	octx, ocancel := context.WithCancelCause(reqCtx)
	stop := context.AfterFunc(sctx, func() { ocancel(context.Cause(sctx)) })
	members := g.openAll(octx, sctx, id, &s.wg, g.cfg.Backends, true)
	stop()
	ocancel(nil)

	views := map[string]backendView{}
	for _, m := range members {
		s.members[m.backend.Name] = m
		s.order = append(s.order, m.backend.Name)
		if m.hasView() {
			views[m.backend.Name] = m.view
		}
	}
	if len(views) == 0 && !g.cfg.Optimizer.Enabled { // with the optimizer, find_tool says none is available
		err := noBackendError(members)
		s.Close()
		return nil, err
	}
	s.agg.Store(g.aggs.build(g.cfg.Aggregation, views))
	s.touch()
	return s, nil
}

// touch records client activity (idle sessions are closed; see
// Gateway.sweepIdle).
func (s *Session) touch() { s.lastActive.Store(time.Now().UnixNano()) }

// idleFor is how long the session has had no client request.
func (s *Session) idleFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, s.lastActive.Load()))
}

// ID returns the client session id (Mcp-Session-Id).
func (s *Session) ID() string { return s.id }

func (s *Session) call(ctx context.Context, backend, op string, fn func(context.Context, *client.Client) error) *BackendError {
	m := s.members[backend]
	if m == nil {
		return &BackendError{Backend: backend, Op: op, Kind: KindClosed, Cause: "not part of this session"}
	}
	return m.do(ctx, op, s.g.cfg.Timeouts.Call, fn)
}

// Close closes every backend connection of the session. In-flight calls
// fail at once; it returns when everything the session started has ended,
// which the close timeout bounds (plus a process kill).
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		s.cancel(backend.ErrSessionClosing)
		closeMembers(slices.Collect(maps.Values(s.members)))
		s.wg.Wait()
		close(s.closed)
	})
	<-s.closed
}

// SessionStatus is the JSON view of one client session.
type SessionStatus struct {
	ID             string                  `json:"id"`
	ClientProtocol string                  `json:"clientProtocolVersion"`
	CreatedAt      time.Time               `json:"createdAt"`
	Tools          int                     `json:"tools"`
	Resources      int                     `json:"resources"`
	Prompts        int                     `json:"prompts"`
	Backends       map[string]MemberStatus `json:"backends"`
	BackendOrder   []string                `json:"backendOrder"`
}

// Status returns a snapshot of the session and each backend's state.
func (s *Session) Status() SessionStatus {
	st := SessionStatus{
		ID:             s.id,
		ClientProtocol: s.clientProtocol,
		CreatedAt:      s.created,
		Backends:       map[string]MemberStatus{},
		BackendOrder:   append([]string(nil), s.order...),
	}
	if agg := s.agg.Load(); agg != nil {
		st.Tools, st.Resources, st.Prompts = len(agg.Tools), len(agg.Resources)+len(agg.Templates), len(agg.Prompts)
	}
	for name, m := range s.members {
		st.Backends[name] = m.status()
	}
	return st
}

// BackendState returns the state of backend name in the session.
func (s *Session) BackendState(name string) (MemberStatus, bool) {
	m, ok := s.members[name]
	if !ok {
		return MemberStatus{}, false
	}
	return m.status(), true
}
