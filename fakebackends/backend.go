package fakebackends

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
	"github.com/vmcp-chaos/vmcp-chaos/internal/downlistener"
)

// errStopped is returned by waits that end because the backend stopped or
// restarted.
var errStopped = errors.New("fake backend stopped")

// Option configures a Backend.
type Option func(*options)

type options struct {
	exit         func(code int) // nil: crash faults with exit: true are refused
	adminToken   string
	token        string // MCP listener's bearer token
	allowNetwork bool   // MCP listener off loopback without a token
	leaseTTL     time.Duration
	maxLeaseTTL  time.Duration
	logger       *slog.Logger
	onReady      func(adminURL string)
}

// WithExit allows `crash` faults with `exit: true` (process mode): exit is
// called with the fault's exit code. Without it such faults are refused.
func WithExit(exit func(code int)) Option { return func(o *options) { o.exit = exit } }

// WithAdminToken requires `Authorization: Bearer <token>` on the control API.
// A control API bound to a non-loopback address refuses to start without one.
func WithAdminToken(token string) Option { return func(o *options) { o.adminToken = token } }

// WithToken requires `Authorization: Bearer <token>` on the MCP listener.
// An MCP listener bound to a non-loopback address refuses to start without
// one (unless WithAllowNetwork).
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithAllowNetwork lets the MCP listener serve a non-loopback address
// without a token: for a backend inside an isolated network (the harness's
// containers), never for a shared host.
func WithAllowNetwork() Option { return func(o *options) { o.allowNetwork = true } }

// ErrAddress marks errors about a listen address: a non-loopback address
// without a token, or an address that cannot be listened on. The command
// line reports them as configuration errors (exit 2).
var ErrAddress = errors.New("bad listen address")

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// core is what the HTTP and the stdio backends share: the script (with
// defaults), the options, the fault engine and the request log.
type core struct {
	script  Script
	opts    options
	engine  *faults.Engine
	log     RequestLog
	changed func() // called after the faults change; may be nil
	leased  leased // the control API's lease
}

// newCore validates a copy of script with its defaults (transport stdio
// when stdio is set; Start refuses it otherwise), applies opts and checks
// the script's faults for its transport.
func newCore(script *Script, stdio bool, opts []Option) (*core, error) {
	if script == nil {
		return nil, errors.New("fakebackends: nil script")
	}
	s := *script
	if stdio {
		s.Transport = TransportStdio
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if !stdio && s.Transport == TransportStdio {
		return nil, fmt.Errorf("fakebackends: script %q: transport stdio is served by ServeStdio, not Start", s.Name)
	}
	c := &core{script: s, engine: faults.NewEngine(s.Seed)}
	for _, o := range opts {
		o(&c.opts)
	}
	if c.opts.logger == nil {
		c.opts.logger = slog.New(slog.DiscardHandler)
	}
	c.startLease()
	if err := c.checkFaults(s.Faults); err != nil {
		return nil, err
	}
	return c, nil
}

// checkFaults validates faults for the script's transport.
func (c *core) checkFaults(list []Fault) error {
	for i := range list {
		f := &list[i]
		if err := ValidateFault(f, fmt.Sprintf("faults[%d]", i), c.script.Transport); err != nil {
			return err
		}
		if p, ok := f.Effective().Params.(*faults.Crash); ok && p.Exit && c.opts.exit == nil {
			return fmt.Errorf("faults[%d]: crash with exit: true needs process mode (chaos backend)", i)
		}
	}
	return nil
}

// changeFaults replaces (add false) or extends the faults in force, after
// checking them: invalid faults are refused and nothing changes.
func (c *core) changeFaults(add bool, faults ...Fault) error {
	if err := c.checkFaults(faults); err != nil {
		return err
	}
	if add {
		c.engine.Add(faults...)
	} else {
		c.engine.Set(faults...)
	}
	if c.changed != nil {
		c.changed()
	}
	return nil
}

// Backend is a running fake MCP backend (streamable HTTP or SSE) with its
// control API. Create it with Start; stop it with Close.
type Backend struct {
	*core

	srv      *http.Server
	addr     string                // host:port of the MCP listener, kept across down/restart
	mcpLn    downlistener.Listener // closed by `down` faults and Stop
	admin    *http.Server
	adminURL string

	mu      sync.Mutex
	gen     *generation
	halted  bool // Stop was called: down until Restart
	stopped bool

	closed   chan struct{}
	loops    sync.WaitGroup // serve goroutines and the scheduler
	inflight sync.WaitGroup // MCP and admin handlers, the admin server's loop
	posts    atomic.Int64   // POST requests being handled
	stalls   atomic.Int64   // requests held in a stall now (for tests)
}

// generation is one life of the MCP server: a restart starts a new one, so
// every session is forgotten.
type generation struct {
	mcp      *server.MCPServer
	handler  http.Handler
	sessions *sessionStore
	streams  *faults.SSEStreams
	done     chan struct{} // closed when this generation ends

	mu       sync.Mutex
	inFlight map[net.Conn]int // connections with a request being handled
}

// connKey is the context key under which the server stores each request's
// connection.
type connKey struct{}

// enter tracks a connection that carries a request of this generation,
// so a restart can cut exactly those, until the returned func is called.
func (g *generation) enter(c net.Conn) (leave func()) {
	if c == nil {
		return func() {}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inFlight[c]++
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.inFlight[c]--; g.inFlight[c] <= 0 {
			delete(g.inFlight, c)
		}
	}
}

// cutInFlight closes every connection with a request in progress.
func (g *generation) cutInFlight() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.inFlight {
		faults.ResetConn(c)
	}
}

// Start validates the script and starts the backend and its control API on
// the script's addresses. The ctx bounds only the start itself.
func Start(ctx context.Context, script *Script, opts ...Option) (*Backend, error) {
	c, err := newCore(script, false, opts)
	if err != nil {
		return nil, err
	}
	s := c.script
	b := &Backend{core: c, closed: make(chan struct{})}
	c.changed = b.reconcile
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if host, _, err := net.SplitHostPort(s.Listen); err != nil || (!control.IsLoopback(host) && c.opts.token == "" && !c.opts.allowNetwork) {
		return nil, fmt.Errorf("fakebackends: %s: %w: MCP listener on non-loopback address %q needs a token (--token-file FILE or $VMCP_CHAOS_TOKEN)", s.Name, ErrAddress, s.Listen)
	}
	ln, err := listen(ctx, s.Listen)
	if err != nil {
		return nil, fmt.Errorf("fakebackends: %s: %w: listen %s: %w", s.Name, ErrAddress, s.Listen, err)
	}
	b.addr = ln.Addr().String()
	b.srv = &http.Server{
		Handler:           control.RequireToken(c.opts.token, "fakebackend", b),
		ReadHeaderTimeout: 10 * time.Second,
		ConnState:         b.mcpLn.ConnState,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ErrorLog: slog.NewLogLogger(b.opts.logger.Handler(), slog.LevelDebug),
	}
	b.adminURL, b.admin, err = b.serveAdmin(ctx, &b.inflight, adminOps{
		restart: b.Restart,
		stop:    b.Stop,
		expire:  b.ExpireSessions,
		info: func() map[string]any {
			return map[string]any{"name": b.script.Name, "url": b.URL(), "transport": b.script.Transport, "protocol": b.script.Protocol}
		},
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	b.gen = b.newGeneration()
	b.engine.Set(s.Faults...)
	b.mcpLn.Serve(ln, func(ln net.Listener) {
		b.loops.Go(func() { _ = b.srv.Serve(ln) }) // returns when ln closes
	})
	b.loops.Go(func() { downlistener.Reconcile(b.closed, b.reconcile) }) // the time-driven faults
	b.reconcile()
	return b, nil
}

func listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	return lc.Listen(ctx, "tcp", addr)
}

// newGeneration builds a fresh MCP server and transport.
func (b *Backend) newGeneration() *generation {
	g := &generation{sessions: newSessionStore(), streams: &faults.SSEStreams{}, done: make(chan struct{}), inFlight: map[net.Conn]int{}}
	g.mcp = newMCPServer(&b.script, g.done)
	switch b.script.Transport {
	case TransportSSE:
		g.handler = server.NewSSEServer(g.mcp,
			server.WithSSEDisableLocalhostProtection(true),
			server.WithKeepAlive(false),
		)
	default:
		opts := []server.StreamableHTTPOption{
			server.WithDisableLocalhostProtection(true),
			server.WithStreamableHTTPLogger(b.opts.logger),
		}
		switch b.script.Protocol {
		case ProtocolModern:
			opts = append(opts, server.WithStateLess(true),
				server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20260728))
		case ProtocolLegacy:
			opts = append(opts, server.WithSessionIdManager(g.sessions),
				server.WithStreamableHTTPProtocolVersions(mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618, mcp.ProtocolVersion20250326))
		default:
			opts = append(opts, server.WithSessionIdManager(g.sessions))
		}
		g.handler = server.NewStreamableHTTPServer(g.mcp, opts...)
	}
	return g
}

func (b *Backend) current() *generation {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen
}

// URL is the MCP endpoint: http://host:port/mcp, or …/sse for SSE.
func (b *Backend) URL() string {
	if b.script.Transport == TransportSSE {
		return "http://" + b.addr + "/sse"
	}
	return "http://" + b.addr + "/mcp"
}

// Addr is the MCP listener's host:port (the same across down and restart).
func (b *Backend) Addr() string { return b.addr }

// AdminURL is the base URL of the control API.
func (b *Backend) AdminURL() string { return b.adminURL }

// Name is the script's name.
func (b *Backend) Name() string { return b.script.Name }

// Script returns a copy of the script the backend runs (with defaults).
func (b *Backend) Script() Script { return b.script }

// Requests returns a copy of the request log.
func (b *Backend) Requests() []RequestRecord { return b.log.Snapshot() }

// InFlight is the number of POST requests being handled now (a stalled
// request stays in flight until released).
func (b *Backend) InFlight() int { return int(b.posts.Load()) }

// Faults returns the faults in force.
func (b *Backend) Faults() []Fault { return b.engine.List() }

// SetFaults replaces every fault; schedules (at/for, flap) start now. Stalls
// held by the replaced faults end. Invalid faults are refused and nothing
// changes.
func (b *Backend) SetFaults(faults ...Fault) error { return b.changeFaults(false, faults...) }

// AddFaults adds faults after the ones in force. Stalls in progress go on.
func (b *Backend) AddFaults(faults ...Fault) error { return b.changeFaults(true, faults...) }

// ClearFaults removes every fault: a `down` backend listens again and stalls
// end.
func (b *Backend) ClearFaults() { _ = b.changeFaults(false) }

// ExpireSessions forgets every session now: old session ids answer 404
// (legacy streamable HTTP) and SSE streams are closed.
func (b *Backend) ExpireSessions() int {
	g := b.current()
	n := g.sessions.forgetAll()
	n += g.streams.CancelAll()
	b.opts.logger.Info("sessions expired", "backend", b.script.Name, "count", n)
	return n
}

// SessionCount is the number of live sessions.
func (b *Backend) SessionCount() int {
	g := b.current()
	return g.sessions.count() + g.streams.Len()
}

// Restart starts a new MCP server behind the same listener: requests in
// flight are cut, SSE streams end, stalls end and every session is
// forgotten, so old session ids answer 404. Idle keep-alive connections
// stay open, so the next request on them reaches the new server (a real
// process restart is `chaos backend` killed and started again). After Stop
// it listens again on the same address. Faults stay.
func (b *Backend) Restart(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return errStopped
	}
	wasHalted := b.halted
	b.halted = false
	b.mu.Unlock()
	if !b.newLife() {
		return errStopped // closed meanwhile
	}
	if wasHalted {
		b.reconcile()
		if downNow, _ := b.engine.Due(false); b.mcpLn.Down() && !downNow {
			return fmt.Errorf("fakebackends: %s: restart: cannot listen on %s again", b.script.Name, b.addr)
		}
	}
	b.opts.logger.Info("restarted", "backend", b.script.Name)
	return nil
}

// Stop stops serving MCP, as a stopped process would: the listener closes
// (connection refused), every connection drops, stalls end and every
// session is forgotten. The control API stays up. Restart serves again on
// the same address.
func (b *Backend) Stop() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.halted = true
	b.mu.Unlock()
	b.reconcile()
	if !b.newLife() {
		return // closed meanwhile
	}
	b.opts.logger.Info("stopped", "backend", b.script.Name)
}

// newLife replaces the MCP server generation: requests in flight on the
// old one are cut, its stalls end and its sessions are forgotten. It
// reports false, and does nothing, once the backend is closed: Close ends
// the generation it finds, so each generation is ended exactly once.
func (b *Backend) newLife() bool {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return false
	}
	old := b.gen
	b.gen = b.newGeneration()
	b.mu.Unlock()
	old.cutInFlight()
	close(old.done)
	old.streams.CancelAll()
	return true
}

// reconcile applies the time-driven faults: `down` and one-shot expiries.
func (b *Backend) reconcile() {
	down, expire := b.engine.Due(true)
	if expire {
		b.ExpireSessions()
	}
	b.mu.Lock() // Stop and Restart change halted, then reconcile
	defer b.mu.Unlock()
	down = down || b.halted
	switch changed, err := b.mcpLn.SetDown(down); {
	case err != nil: // try again on the next tick
		b.opts.logger.Error("cannot listen again", "backend", b.script.Name, "addr", b.addr, "err", err)
	case changed && down:
		b.opts.logger.Info("down", "backend", b.script.Name)
	case changed:
		b.opts.logger.Info("up", "backend", b.script.Name)
	}
}

// Close stops the backend and its control API, ends every stall and waits
// (bounded) for handlers to return.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return nil
	}
	b.stopped = true
	b.leased.lease.Stop()
	b.mcpLn.Close() // its server closes it
	close(b.closed)
	close(b.gen.done)
	b.gen.streams.CancelAll()
	b.mu.Unlock()

	_ = b.srv.Close() // closes the listener and every connection
	_ = b.admin.Close()

	waited := make(chan struct{})
	go func() {
		b.loops.Wait()
		b.inflight.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("fakebackends: %s: handlers still running 5s after close", b.script.Name)
	}
}

// exit ends the process for a crash fault with exit: true.
func (b *Backend) exit(code int) {
	if b.opts.exit != nil {
		b.opts.exit(code)
		return
	}
	os.Exit(code)
}
