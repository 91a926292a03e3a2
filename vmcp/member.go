package vmcp

import (
	"context"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// BackendState is the state of one backend within one session (or the
// shared pool).
type BackendState string

// Backend states.
const (
	// StateConnected: the last request succeeded (or the connection was
	// just opened).
	StateConnected BackendState = "connected"
	// StateError: the last request failed; LastError says why.
	StateError BackendState = "error"
	// StateClosed: the session is closed.
	StateClosed BackendState = "closed"
)

// member is one backend within one owner (a client session or one slot of
// the shared pool): its current connection, its state, and the shared
// re-initialization. It is where per-session backend state lives; keepalive
// and health hook in here.
type member struct {
	backend      config.Backend
	owner        string // session id ("" for the pool)
	d            *backend.Dialer
	timeouts     config.Timeouts
	preferLegacy bool
	res          *resilience       // the gate and observer of every request
	shared       *sharedCatalogues // told when the backend session is re-initialized
	ctx          context.Context   // the owner's lifetime; cause backend.ErrSessionClosing when it ends
	wg           *sync.WaitGroup   // the owner's background work

	mu        sync.Mutex
	conn      *backend.Conn
	state     BackendState
	lastErr   *BackendError
	lastErrAt time.Time
	lastOKAt  time.Time
	reinit    *flight
	reinits   int
	closed    bool
	view      backendView
	listed    bool      // view holds what the backend offers (its own lists or the catalogue's)
	startedOK bool      // connected when its owner opened it
	probe     *probeRun // the keepalive probe running under Exclusive (handle.go)
}

// flight is one re-initialization shared by every caller that needs it.
type flight struct {
	done  chan struct{}
	conn  *backend.Conn
	err   *BackendError
	after <-chan struct{} // a keepalive probe to wait for before dialing (handle.go)
	// opened, when set, makes this the member's first connection, opened
	// after its session answered (shared.go); it is told the outcome.
	opened func(*backend.Conn, *BackendError)
}

// MemberStatus is a snapshot of one backend's state in one session.
type MemberStatus struct {
	State             BackendState `json:"state"`
	LastError         string       `json:"lastError,omitempty"`
	LastErrorKind     ErrorKind    `json:"lastErrorKind,omitempty"`
	LastErrorAt       *time.Time   `json:"lastErrorAt,omitempty"`
	LastSuccessAt     *time.Time   `json:"lastSuccessAt,omitempty"`
	Transport         string       `json:"transport"`
	ProtocolVersion   string       `json:"protocolVersion,omitempty"`
	SessionID         string       `json:"backendSessionId,omitempty"`
	Reinitializations int          `json:"reinitializations"`
}

func (m *member) status() MemberStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := MemberStatus{State: m.state, Transport: string(m.backend.Transport), Reinitializations: m.reinits,
		LastErrorAt: timeOrNil(m.lastErrAt), LastSuccessAt: timeOrNil(m.lastOKAt)} // lastErrAt is set with lastErr
	if m.lastErr != nil {
		st.LastError = m.lastErr.Error()
		st.LastErrorKind = m.lastErr.Kind
	}
	if m.conn != nil {
		st.ProtocolVersion = m.conn.Protocol()
		st.SessionID = m.conn.SessionID()
	}
	return st
}

// timeOrNil returns &t, or nil for the zero time.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// record moves the state after a request.
func (m *member) record(be *BackendError) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	switch {
	case be == nil:
		m.state = StateConnected
		m.lastOKAt = time.Now()
	case be.Kind == KindCanceled || be.Kind == KindClosed:
		// The client gave up or the session is closing: says nothing
		// about the backend.
	case (be.Kind == KindCircuitOpen || be.Kind == KindUnhealthy) && m.lastErr != nil:
		// Refused by the gateway before the network: the backend's own
		// last failure (the one that opened the circuit) stays the last
		// error; a keepalive probe refused later must not hide it.
		m.state = StateError
	default:
		m.state = StateError
		m.lastErr = be
		m.lastErrAt = time.Now()
	}
}

// do runs one request against the backend through the member's current
// connection: bounded by timeout as a whole, with one re-initialization and
// one retry when the backend answers 404 for its session (the request was
// not executed). No other failure is retried.
func (m *member) do(ctx context.Context, op string, timeout time.Duration, fn func(context.Context, *client.Client) error) *BackendError {
	return m.doConn(ctx, op, timeout, func(ctx context.Context, c *backend.Conn) error { return fn(ctx, c.Client()) })
}

// doConn is do for a request made on the connection itself (the
// pass-through hop's Forward).
func (m *member) doConn(ctx context.Context, op string, timeout time.Duration, fn func(context.Context, *backend.Conn) error) *BackendError {
	return m.request(op, func() *BackendError { return m.attempt(ctx, op, timeout, fn) }, m.record)
}

// request runs fn once the gate admits it and tells the gate its outcome
// (a refusal is the outcome as it is), then hands the outcome to record
// and to the observer.
func (m *member) request(op string, fn func() *BackendError, record func(*BackendError)) *BackendError {
	start := time.Now()
	done, be := m.res.Admit(m.backend.Name, op)
	if be == nil {
		be = fn()
		done(be)
	}
	record(be)
	m.res.ObserveCall(CallEvent{Backend: m.backend.Name, Op: op, Session: m.owner, Duration: time.Since(start), Err: be})
	return be
}

func (m *member) attempt(ctx context.Context, op string, timeout time.Duration, fn func(context.Context, *backend.Conn) error) *BackendError {
	// The whole operation, re-initialization included, has one deadline;
	// the session's end cuts it off too.
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, backend.ErrCallTimeout)
	defer cancel()
	setCancel(ctx, cancel) // a pass-through call's client may cancel it
	var c *backend.Conn
	run := func(ctx context.Context) error { return fn(ctx, c) }
	if c = m.usable(); c != nil {
		// The usual request: a live connection, nothing to wait for.
		// Invoke watches the session's end itself.
		be := c.InvokeOwned(ctx, m.ctx, backend.ErrSessionClosing, op, timeout, run)
		if !m.retryable(be, c) {
			return be
		}
	}
	ctx, cancelOwner := context.WithCancelCause(ctx)
	defer cancelOwner(nil)
	stop := context.AfterFunc(m.ctx, func() { cancelOwner(backend.ErrSessionClosing) })
	defer stop()

	if c == nil {
		var be *BackendError
		if c, be = m.current(ctx, op, timeout); be != nil {
			return be
		}
		if be = c.Invoke(ctx, op, timeout, run); !m.retryable(be, c) {
			return be
		}
	}
	var be *BackendError
	if c, be = m.reconnect(ctx, c, op, timeout); be != nil {
		return be
	}
	return c.Invoke(ctx, op, timeout, run)
}

// usable returns the member's connection if a request can go out on it
// at once (open, alive, no stream probe to wait for), else nil.
func (m *member) usable() *backend.Conn {
	m.mu.Lock()
	c, closed := m.conn, m.closed
	m.mu.Unlock()
	if closed || c == nil || !c.AliveUnprobed() {
		return nil
	}
	return c
}

// retryable reports whether a request that failed with be on c is tried
// once more on a new connection. A 404 means the backend did not execute
// the request. So does a connection closed under us by another caller's
// re-initialization: it replaced a connection whose backend session had
// expired.
func (m *member) retryable(be *BackendError, c *backend.Conn) bool {
	return be != nil && (be.Kind == KindSessionExpired || (be.Kind == KindClosed && m.replaced(c)))
}

// replaced reports whether c was replaced by a re-initialization while the
// member is still open.
func (m *member) replaced(c *backend.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.closed && m.conn != nil && m.conn != c
}

// current returns a live connection, reconnecting (shared) when the last
// one died (a cut SSE stream, an exited stdio process).
func (m *member) current(ctx context.Context, op string, timeout time.Duration) (*backend.Conn, *BackendError) {
	m.mu.Lock()
	c, closed := m.conn, m.closed
	m.mu.Unlock()
	if !closed && c != nil && c.AliveAfterProbe(ctx) {
		return c, nil
	}
	return m.reconnect(ctx, c, op, timeout) // which fails on a closed member
}

// reconnect replaces failed with a new connection. Concurrent callers share
// one dial; a caller whose context ends stops waiting (the dial goes on,
// bounded by the initialize timeout, for the others).
func (m *member) reconnect(ctx context.Context, failed *backend.Conn, op string, timeout time.Duration) (*backend.Conn, *BackendError) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, &BackendError{Backend: m.backend.Name, Op: op, Kind: KindClosed, Cause: "session closed", Err: backend.ErrSessionClosing}
	}
	if m.conn != nil && m.conn != failed && m.conn.Alive() {
		c := m.conn
		m.mu.Unlock()
		return c, nil
	}
	fl := m.reinit
	if fl == nil {
		fl = &flight{done: make(chan struct{}), after: m.probeToAwait(ctx)}
		m.reinit = fl
		m.reinits++
		m.wg.Go(func() { m.redial(fl) })
	}
	m.probeWaitsForReinit(ctx)
	m.mu.Unlock()

	select {
	case <-fl.done:
		m.mu.Lock()
		m.probeResumes(ctx)
		m.mu.Unlock()
		if fl.err != nil {
			be := *fl.err
			be.Op = op
			return nil, &be
		}
		return fl.conn, nil
	case <-ctx.Done():
		return nil, backend.WaitError(ctx, m.backend.Name, op, timeout)
	}
}

func (m *member) redial(fl *flight) {
	m.awaitProbe(fl) // never dial while a keepalive probe holds the session
	if fl.opened == nil {
		m.shared.invalidate(m.backend.Name) // a session expired or died: the backend may have changed
	}
	c, berr := m.d.Dial(m.ctx, m.backend, m.preferLegacy)
	if fl.opened != nil {
		fl.opened(c, berr)
	}
	m.mu.Lock()
	m.reinit = nil
	var old *backend.Conn
	switch {
	case m.closed:
		old, c = c, nil
		berr = &BackendError{Backend: m.backend.Name, Op: "initialize", Kind: KindClosed, Cause: "session closed", Err: backend.ErrSessionClosing}
	case berr == nil:
		old, m.conn = m.conn, c
	}
	fl.conn, fl.err = c, berr
	m.mu.Unlock()
	close(fl.done)
	if old != nil {
		<-old.Close()
	}
}

// close closes the member's connection; the returned channel is closed
// once it is closed.
func (m *member) close() <-chan struct{} {
	m.mu.Lock()
	m.closed = true
	m.state = StateClosed
	c := m.conn
	m.mu.Unlock()
	if c == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return c.Close()
}
