// Package vmcp is the reference vMCP gateway: an MCP server (mcp-go on both
// sides) that aggregates N backend MCP servers' tools, resources and
// prompts, routes calls to them, names the failing backend in every error,
// and never hangs on a misbehaving backend. See README.md.
package vmcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"go.opentelemetry.io/otel/metric"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/access"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// Config is the gateway configuration (see package config).
type Config = config.Config

// LoadConfig reads, strictly decodes and validates a YAML configuration
// file. Errors name the file, the line and the field.
func LoadConfig(path string) (*Config, error) { return config.Load(path) }

// ParseConfig is LoadConfig for in-memory YAML; file names it in errors.
func ParseConfig(data []byte, file string) (*Config, error) { return config.Parse(data, file) }

// Option configures a Gateway.
type Option func(*options)

type options struct {
	logger          *slog.Logger
	observer        Observer
	gate            Gate
	sessionObserver SessionObserver
	meterProvider   metric.MeterProvider
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithObserver registers an observer of every backend request.
func WithObserver(obs Observer) Option { return func(o *options) { o.observer = obs } }

// WithGate registers a gate (circuit breaker) consulted before every
// backend request.
func WithGate(gate Gate) Option { return func(o *options) { o.gate = gate } }

// Gateway is the vMCP gateway. It is an http.Handler serving MCP at /mcp,
// GET /status and GET /api/sessions/{id}.
type Gateway struct {
	cfg      *config.Config
	opts     options
	logger   *slog.Logger
	dialer   *backend.Dialer
	httpBase *http.Transport // the base of every backend HTTP client

	ctx    context.Context
	cancel context.CancelCauseFunc

	mcp        *server.MCPServer
	streamable *server.StreamableHTTPServer
	handler    http.Handler
	pool       *pool
	res        *resilience       // health, breaker, keepalive, metrics
	opt        *optimizerState   // find_tool's shared index
	cats       *catalogues       // list answers shared between sessions (catalogue.go)
	shared     *sharedCatalogues // each backend's catalogue session (shared.go)
	aggs       aggregates

	promptMu    sync.Mutex
	promptNames map[string]bool
	poolApplied atomic.Int64 // the pool view version installed for stateless requests
	poolApplyMu sync.Mutex   // serialises installing it
	passed      atomic.Int64 // requests answered by the pass-through hop (passthrough.go)
	noModernHop atomic.Bool  // tests: stateless requests take mcp-go's path (passthrough_modern.go)
	paramHdrs   atomic.Pointer[paramHeaderTools]

	mu              sync.Mutex
	sessions        map[string]*Session
	openingSessions int                  // initialize requests admitted under limits.maxSessions, not yet done
	closed          map[string]time.Time // recently closed session ids → 404 "terminated"
	closing         bool
	bg              sync.WaitGroup // asynchronous session closes
	loops           sync.WaitGroup // the idle-session sweeper; ends with g.ctx
	// live mirrors sessions (written under mu with it) so the request
	// path looks sessions up without a global lock.
	live sync.Map // id → *Session

	shutdownOnce sync.Once

	started  time.Time
	srv      *http.Server
	ln       net.Listener
	serveErr chan error
}

// New builds a gateway. It does not contact any backend: sessions connect
// to backends when clients initialize; stateless clients use a shared pool
// opened on first use.
func New(cfg *Config, opts ...Option) (*Gateway, error) {
	if cfg == nil {
		return nil, errors.New("vmcp: nil config")
	}
	g := &Gateway{
		cfg:         cfg,
		sessions:    map[string]*Session{},
		closed:      map[string]time.Time{},
		promptNames: map[string]bool{},
		started:     time.Now(),
		cats:        newCatalogues(),
	}
	g.shared = newSharedCatalogues(g)
	for _, o := range opts {
		o(&g.opts)
	}
	g.logger = cmp.Or(g.opts.logger, slog.New(slog.DiscardHandler))
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = 64
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	g.httpBase = base
	g.dialer = backend.NewDialer(g.ctx, cfg, base, g.logger,
		mcp.Implementation{Name: "vmcp-gateway/" + cfg.Name, Version: Version})
	res, err := newResilience(g)
	if err != nil {
		g.cancel(err)
		return nil, err
	}
	g.res = res
	g.opt = newOptimizerState(cfg.Optimizer.MaxResults, g.logger)
	g.pool = newPool(g)
	g.loops.Go(g.sweepIdle)
	g.mcp = g.newMCPServer()
	g.streamable = server.NewStreamableHTTPServer(g.mcp,
		server.WithSessionIdManager(sessionIDs{g}),
		server.WithStreamableHTTPLogger(g.logger),
	)
	g.handler = g.routes()
	return g, nil
}

// Config returns the gateway's configuration.
func (g *Gateway) Config() *Config { return g.cfg }

func (g *Gateway) session(id string) *Session {
	if s, ok := g.live.Load(id); ok {
		return s.(*Session)
	}
	return nil
}

func (g *Gateway) wasClosed(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.closed[id]
	return ok
}

// addSession registers an opened session; false when shutting down.
func (g *Gateway) addSession(s *Session) bool {
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		return false
	}
	g.sessions[s.id] = s
	g.live.Store(s.id, s)
	g.mu.Unlock()
	g.res.SessionOpened(s)
	return true
}

// maxClosedIDs bounds how many closed session ids are remembered.
const maxClosedIDs = 4096

// closeSessionAsync removes a session and closes it in the background
// (Shutdown waits for it).
func (g *Gateway) closeSessionAsync(id string) {
	g.mu.Lock()
	s := g.sessions[id]
	delete(g.sessions, id)
	g.live.Delete(id)
	if s != nil {
		if len(g.closed) >= maxClosedIDs {
			for k := range g.closed {
				delete(g.closed, k)
				break
			}
		}
		g.closed[id] = time.Now()
		g.bg.Go(func() { s.Close(); g.res.SessionClosed(s) })
	}
	g.mu.Unlock()
}

// sweepIdle closes client sessions idle longer than timeouts.sessionIdle,
// until the gateway shuts down.
func (g *Gateway) sweepIdle() {
	idle := g.cfg.Timeouts.SessionIdle
	t := time.NewTicker(max(idle/4, 10*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case now := <-t.C:
			g.mu.Lock()
			var expired []string
			for id, s := range g.sessions {
				if s.idleFor(now) > idle {
					expired = append(expired, id)
				}
			}
			g.mu.Unlock()
			for _, id := range expired {
				g.logger.Info("closing idle session", "session", id, "idle", idle)
				g.closeSessionAsync(id)
			}
		}
	}
}

// Sessions returns the ids of the open sessions, sorted.
func (g *Gateway) Sessions() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Sorted(maps.Keys(g.sessions))
}

// Session returns an open session by id.
func (g *Gateway) Session(id string) (*Session, bool) {
	s := g.session(id)
	return s, s != nil
}

// ServeHTTP serves MCP at /mcp and the admin endpoints.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.handler.ServeHTTP(w, r)
}

// Start listens on addr (e.g. "127.0.0.1:4483"; port 0 picks one) and
// serves in the background until Shutdown. ctx bounds only the start. With
// incomingAuth anonymous it refuses a non-loopback address (access.ErrExposed)
// unless incomingAuth.allowNetwork is set.
func (g *Gateway) Start(ctx context.Context, addr string) error {
	if err := access.CheckListen(ctx, g.cfg.IncomingAuth, addr); err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("vmcp: listen: %w", err)
	}
	g.mu.Lock()
	if g.srv != nil {
		g.mu.Unlock()
		ln.Close()
		return errors.New("vmcp: already started")
	}
	g.ln = ln
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(g.logger.Handler(), slog.LevelDebug)}
	g.serveErr = make(chan error, 1)
	srv := g.srv
	g.mu.Unlock()
	go func() { g.serveErr <- srv.Serve(ln) }()
	return nil
}

// Addr returns the listening address ("" before Start).
func (g *Gateway) Addr() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln == nil {
		return ""
	}
	return g.ln.Addr().String()
}

// URL returns the MCP endpoint URL, http://ADDR/mcp ("" before Start).
func (g *Gateway) URL() string {
	if a := g.Addr(); a != "" {
		return "http://" + a + "/mcp"
	}
	return ""
}

// Shutdown closes every session and the pool (in-flight backend calls fail
// at once; each backend connection gets the close timeout to end
// gracefully, then is cut off), then stops the HTTP server. It is bounded by
// the close timeout even with stalled backends; ctx bounds it further: when
// ctx ends first, Shutdown returns ctx.Err() at once and the connections
// still closing end in the background (cut off, within the close timeout).
// Calls after the first wait for it and return nil.
func (g *Gateway) Shutdown(ctx context.Context) (err error) {
	g.shutdownOnce.Do(func() { err = g.shutdown(ctx) })
	return err
}

func (g *Gateway) shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.closing = true
	sessions := make([]*Session, 0, len(g.sessions))
	for id, s := range g.sessions {
		sessions = append(sessions, s)
		g.closed[id] = time.Now()
	}
	g.sessions = map[string]*Session{}
	g.live.Clear()
	srv := g.srv
	g.mu.Unlock()

	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for _, s := range sessions {
			wg.Go(func() { s.Close(); g.res.SessionClosed(s) })
		}
		wg.Go(g.pool.close)
		wg.Go(g.shared.close)
		wg.Wait()
		g.bg.Wait()
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
	}
	g.res.stop(ctx)
	g.cancel(backend.ErrSessionClosing) // cuts anything left
	g.loops.Wait()
	_ = g.streamable.Shutdown(ctx)
	if srv != nil {
		// Every session is closed by now: give in-flight responses a moment,
		// then cut. (net/http waits up to 5 s for connections that opened but
		// never sent a request.)
		sctx, scancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_ = srv.Shutdown(sctx)
		scancel()
		_ = srv.Close()
		err = cmp.Or(err, ctx.Err())
		if serveErr := <-g.serveErr; !errors.Is(serveErr, http.ErrServerClosed) {
			err = cmp.Or(err, serveErr)
		}
	}
	closeIdle := g.httpBase.CloseIdleConnections
	select {
	case <-done:
		closeIdle()
	case <-ctx.Done():
		// ctx ended first: return now. What is left was cut off above
		// (g.cancel) and ends on its own, within the close timeout.
		go func() { <-done; closeIdle() }()
		err = cmp.Or(err, ctx.Err())
	}
	return err
}
