// Package proxy is a transparent, MCP-aware fault proxy in front of one real
// MCP backend. With no fault active it passes every exchange through
// unchanged: streamable HTTP (JSON and SSE answers, standalone GET streams,
// Mcp-Session-Id, DELETE, resumption with Last-Event-ID) and the legacy SSE
// transport, whose endpoint event is rewritten to point at the proxy. Faults
// are set through a control API (the same routes as the fake backends'),
// and every fault set holds a lease: when nobody renews it, the faults are
// cleared and the deployment heals itself.
package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
	"github.com/vmcp-chaos/vmcp-chaos/internal/downlistener"
)

// Options configure a Proxy.
type Options struct {
	// Upstream is the backend's URL (http or https). Requests keep their
	// path; the URL's path only says where the MCP endpoint is (URL).
	Upstream string
	// Listen is the proxy's MCP address (default 127.0.0.1:0).
	Listen string
	// Admin is the control API's address (default 127.0.0.1:0).
	Admin string
	// AdminToken, when set, is required as a bearer token by the control
	// API; a non-loopback Admin address needs one.
	AdminToken string
	// Token, when set, is required on the MCP listener (Proxy-Authorization
	// or Authorization: Bearer); a non-loopback Listen address needs one.
	Token string
	// StandIn lets a non-loopback Listen address go without a token: the
	// proxy stands in for a backend that is itself reachable by whoever
	// reaches the proxy (chaos kube proxy, behind the backend's own
	// Kubernetes Service, which the gateway reaches without a token).
	StandIn bool
	// LeaseTTL is the lease of faults set without a ttl (default
	// DefaultLeaseTTL); MaxLeaseTTL bounds any lease (default
	// DefaultMaxLeaseTTL).
	LeaseTTL, MaxLeaseTTL time.Duration
	// Engine applies the faults (default NewEngine()).
	Engine Engine
	// Logger receives lease expiries and upstream errors (default: discard).
	Logger *slog.Logger
}

// Proxy is one running proxy: the pass-through, the fault engine and the
// control API.
type Proxy struct {
	opts     Options
	upstream *url.URL
	engine   Engine
	lease    *control.Lease
	ctl      sync.Mutex            // serializes fault changes and lease expiry
	streams  faults.SSEStreams     // legacy SSE session streams, by session id
	sessions sessions              // session ids seen, and those expired by a fault
	mcpLn    downlistener.Listener // the MCP listener (a down fault closes it)
	closed   chan struct{}
	logger   *slog.Logger
	requests fakebackends.RequestLog
	rp       *httputil.ReverseProxy
	handler  http.Handler

	mcp, admin       *http.Server
	mcpURL, adminURL string
	wg               sync.WaitGroup
}

// New checks the options and builds a proxy without listening (see
// Handler for use inside another server, Start to serve).
func New(opts Options) (*Proxy, error) {
	u, err := url.Parse(opts.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("proxy: --upstream %q: want an http or https URL with a host", opts.Upstream)
	}
	opts.Listen = cmp.Or(opts.Listen, "127.0.0.1:0")
	opts.Admin = cmp.Or(opts.Admin, "127.0.0.1:0")
	opts.LeaseTTL = cmp.Or(opts.LeaseTTL, DefaultLeaseTTL)
	opts.MaxLeaseTTL = cmp.Or(opts.MaxLeaseTTL, DefaultMaxLeaseTTL)
	if opts.LeaseTTL < 0 || opts.LeaseTTL > opts.MaxLeaseTTL {
		return nil, fmt.Errorf("proxy: lease ttl %s: want > 0 and <= the maximum %s", opts.LeaseTTL, opts.MaxLeaseTTL)
	}
	if opts.Engine == nil {
		opts.Engine = NewEngine()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{opts: opts, upstream: u, engine: opts.Engine, logger: opts.Logger, closed: make(chan struct{})}
	p.lease = control.NewLease(func(gen uint64) {
		p.ctl.Lock()
		defer p.ctl.Unlock()
		if !p.lease.Expired(gen) {
			return
		}
		n := p.engine.Len()
		p.engine.Clear()
		p.logger.Warn("lease expired without renewal: faults cleared", "faults", n)
	})
	p.rp = &httputil.ReverseProxy{
		Rewrite:        p.rewrite,
		Transport:      newTransport(),
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.upstreamError,
		ErrorLog:       slog.NewLogLogger(opts.Logger.Handler(), slog.LevelDebug),
	}
	p.handler = p.engine.Handler(p.rp, Host{ExpireSessions: func() { p.ExpireSessions() }})
	return p, nil
}

// newTransport is the upstream transport: no proxy from the environment,
// no transparent compression (Accept-Encoding passes through as sent),
// pooled keep-alive connections, bounded dialing. There is no response
// timeout: a stalled backend must look stalled to the client, whose own
// deadline (its connection closing) ends the upstream request.
func newTransport() *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 128,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
	}
}

// rewrite sends the request to the upstream host with its own path and
// query, and the upstream's Host header (mcp-go refuses a loopback
// connection with a foreign Host). No X-Forwarded headers are added.
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme = p.upstream.Scheme
	pr.Out.URL.Host = p.upstream.Host
	pr.Out.Host = p.upstream.Host
}

// modifyResponse rewrites a legacy SSE endpoint event that names the
// upstream to name the proxy instead.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	if resp.Request.Method == http.MethodGet && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		in := resp.Request.Context().Value(inboundKey{})
		st, _ := resp.Request.Context().Value(tapKey{}).(*faults.SSEStream)
		if r, ok := in.(*http.Request); ok && st != nil {
			resp.Body = newEndpointRewriter(resp.Body, p.upstream, proxyOrigin(r), func(endpoint string) {
				// The stream joins the registry under the endpoint's session.
				if id := faults.EndpointSession(endpoint); st.SetSession(id) {
					p.sessions.seen(id)
				}
			})
		}
	}
	return nil
}

// upstreamError handles an upstream that could not be reached or failed
// before answering: the client sees its connection reset, as it would
// talking to the backend directly (not a 502 from a proxy it does not know
// about). A client that went away is left alone.
func (p *Proxy) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	p.logger.Debug("upstream error", "method", r.Method, "path", r.URL.Path, "err", err)
	faults.AbortConn(w, true)
}

type inboundKey struct{}

// closeGrace is how long Close lets requests in progress finish.
const closeGrace = 500 * time.Millisecond

// ServeHTTP serves MCP traffic: the fault engine in front of the
// pass-through.
//
// A GET's answer goes through a faults.SSEStream, so that a legacy SSE session's
// stream can carry answers written by faults; a legacy SSE POST (its
// ?sessionId=) finds its stream with StreamFrom.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		// The request body belongs to the upstream request until the
		// transport is done with it, which can be after the answer has
		// started (an upstream answering as it reads, or the transport's
		// goroutine simply running late). By default the HTTP/1 server
		// drains and closes the body when the answer starts; the
		// transport's read then fails and it drops the upstream connection,
		// cutting the answer (golang/go#40747). HTTP/2 is always duplex.
		_ = http.NewResponseController(w).EnableFullDuplex()
	}
	rec := fakebackends.NewRequestRecord(r)
	sw := &control.StatusWriter{ResponseWriter: w}
	w = sw
	defer func() {
		rec.Status = sw.Status
		rec.DurationMS = float64(time.Since(rec.Time).Microseconds()) / 1000
		p.requests.Add(rec)
		p.sessions.seen(sw.Header().Get("Mcp-Session-Id"))
	}()
	if p.sessions.isExpired(rec.SessionID) {
		rec.Fault = "session_expired"
		http.Error(w, "session not found (expired by a session_expire fault)", http.StatusNotFound)
		return
	}
	p.sessions.seen(rec.SessionID)
	ctx := context.WithValue(context.WithValue(r.Context(), inboundKey{}, r), recordKey{}, &rec)
	switch r.Method {
	case http.MethodGet:
		var st *faults.SSEStream
		st, ctx = p.streams.Open(ctx, w)
		defer st.Close()
		ctx = context.WithValue(ctx, tapKey{}, st)
		w = st
	case http.MethodPost:
		if id := r.URL.Query().Get("sessionId"); id != "" {
			if st := p.streams.Get(id); st != nil {
				ctx = context.WithValue(ctx, streamKey{}, Stream(st))
			}
		}
	}
	p.handler.ServeHTTP(w, r.WithContext(ctx))
}

type tapKey struct{}

// proxyOrigin is the scheme and host the client used to reach the proxy.
func proxyOrigin(r *http.Request) *url.URL {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return &url.URL{Scheme: scheme, Host: r.Host}
}

// Start listens on the MCP and control addresses and serves until Close.
func (p *Proxy) Start(ctx context.Context) error {
	if err := checkAdminAddr(p.opts.Admin, p.opts.AdminToken); err != nil {
		return err
	}
	if err := checkListenAddr(p.opts.Listen, p.opts.Token); err != nil && !p.opts.StandIn {
		return err
	}
	var lc net.ListenConfig
	mln, err := lc.Listen(ctx, "tcp", p.opts.Listen)
	if err != nil {
		return fmt.Errorf("proxy: listen %s: %w", p.opts.Listen, err)
	}
	aln, err := lc.Listen(ctx, "tcp", p.opts.Admin)
	if err != nil {
		_ = mln.Close()
		return fmt.Errorf("proxy: admin listen %s: %w", p.opts.Admin, err)
	}
	p.mcpURL = "http://" + mln.Addr().String() + p.upstream.EscapedPath()
	p.adminURL = "http://" + aln.Addr().String()
	p.mcp = &http.Server{Handler: requireProxyToken(p.opts.Token, p), ReadHeaderTimeout: 10 * time.Second, ConnState: p.mcpLn.ConnState}
	p.admin = &http.Server{Handler: p.AdminHandler(), ReadHeaderTimeout: 10 * time.Second}
	p.mcpLn.Serve(mln, p.serve)
	p.wg.Go(func() {
		if err := p.admin.Serve(aln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logger.Error("serve control API", "err", err)
		}
	})
	// The time-driven faults (down, one-shot session expiry) until the
	// proxy closes.
	p.wg.Go(func() { downlistener.Reconcile(p.closed, p.reconcile) })
	return nil
}

// URL is the proxy's MCP URL: its address with the upstream URL's path.
func (p *Proxy) URL() string { return p.mcpURL }

// AdminURL is the control API's base URL.
func (p *Proxy) AdminURL() string { return p.adminURL }

// Upstream is the upstream URL.
func (p *Proxy) Upstream() string { return p.upstream.String() }

// Engine is the fault engine in use.
func (p *Proxy) Engine() Engine { return p.engine }

// Close clears the faults (ending their stalls), stops serving and waits
// for the serving loops; bounded by ctx.
func (p *Proxy) Close(ctx context.Context) error {
	select {
	case <-p.closed:
		return nil
	default:
		close(p.closed)
	}
	if p.mcpLn.Close() && p.mcp != nil {
		_ = p.mcp.Close() // down: nothing listens; drop what is left
	}
	p.lease.Stop()
	p.engine.Clear()
	// Requests get a short grace; long-lived streams (SSE, standalone GET)
	// are then cut, as the backend going away would cut them.
	grace, cancel := context.WithTimeout(ctx, closeGrace)
	defer cancel()
	var errs []error
	for _, srv := range []*http.Server{p.mcp, p.admin} {
		if srv == nil {
			continue
		}
		if err := srv.Shutdown(grace); err != nil {
			_ = srv.Close()
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		}
	}
	p.wg.Wait()
	if t, ok := p.rp.Transport.(*http.Transport); ok {
		t.CloseIdleConnections()
	}
	return errors.Join(errs...)
}
