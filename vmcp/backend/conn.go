package backend

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// ErrCallTimeout is the cancel cause (context.WithTimeoutCause) a caller
// gives an operation's own deadline: a request cut by it is classified as
// KindTimeout ("timed out after <timeout>").
var ErrCallTimeout = errors.New("backend call timed out")

// Dialer opens backend connections with the gateway's settings.
type Dialer struct {
	cfg        *config.Config
	httpBase   http.RoundTripper
	logger     *slog.Logger
	clientInfo mcp.Implementation
	baseCtx    context.Context // gateway lifetime: connections never outlive it
	raw        *rawPools       // the direct forward's connections (rawhttp.go); nil: none
}

// NewDialer returns a Dialer for the backends of cfg, whose timeouts and
// limits bound every connection it opens. Backend HTTP requests go through
// base (wrapped by the gateway's validating RoundTripper); clientInfo is
// sent in initialize; no connection outlives life.
func NewDialer(life context.Context, cfg *config.Config, base http.RoundTripper, logger *slog.Logger, clientInfo mcp.Implementation) *Dialer {
	return &Dialer{cfg: cfg, httpBase: base, logger: cmp.Or(logger, slog.New(slog.DiscardHandler)), clientInfo: clientInfo, baseCtx: life,
		raw: newRawPools(life, base)}
}

// Conn is one MCP client connection to one backend: the only place the
// gateway talks to a backend. Every request goes through Invoke, which
// bounds it, races it against the connection's death and classifies its
// failure.
type Conn struct {
	backend config.Backend
	d       *Dialer
	client  *client.Client

	life       context.Context // the transport's lifetime (SSE stream, stdio process)
	lifeCancel context.CancelFunc
	dead       context.Context // done when the connection died or is closing
	kill       context.CancelCauseFunc

	mu          sync.Mutex
	deadErr     error
	outstanding map[string]struct{} // sse transport: ids awaiting a response
	abandoned   map[string]struct{} // sse transport: ids given up on (timeout, cancel)
	abandonRing []string            // abandoned ids, oldest first, at most maxAbandoned

	protocol  string
	sessionID string
	caps      mcp.ServerCapabilities
	announced string // the initialize result less the session (Announced)

	bg        sync.WaitGroup // cancel notifications in flight
	bgClosed  bool           // under mu: close is waiting for bg; no more Add
	probe     chan struct{}  // under mu: closed when the stream probe under way ends (sseprobe.go)
	closeOnce sync.Once
	closed    chan struct{}
	forwarded atomic.Int64 // requests sent by Forward (their ids)

	streamable    *transport.StreamableHTTP // the client's transport, if streamable HTTP (forwardhttp.go)
	handedOver    atomic.Int64              // direct forwards whose answer mcp-go's transport read
	direct        *rawTarget                // where the direct client sends (nil: the Transport does)
	statelessMeta                           // the stateless forward's _meta (forwardstateless.go)
}

// Client is the connection's mcp-go client. Requests made with it must run
// inside Invoke, which bounds and classifies them.
func (c *Conn) Client() *client.Client { return c.client }

// Protocol is the MCP revision the backend agreed to in initialize.
func (c *Conn) Protocol() string { return c.protocol }

// Name is the backend's configured name.
func (c *Conn) Name() string { return c.backend.Name }

// Transport is the backend's configured transport.
func (c *Conn) Transport() config.Transport { return c.backend.Transport }

// SessionID is the backend's session id ("" on a stateless connection or
// stdio).
func (c *Conn) SessionID() string { return c.sessionID }

// Capabilities are the capabilities the backend declared in initialize.
func (c *Conn) Capabilities() mcp.ServerCapabilities { return c.caps }

// Announced is what the backend said of itself in initialize (revision,
// serverInfo, capabilities, instructions), encoded: two connections whose
// Announced differ reached backends that differ (a restart, another
// version, another configuration).
func (c *Conn) Announced() string { return c.announced }

// announced encodes an initialize result for Announced.
func announced(r *mcp.InitializeResult) string {
	b, err := json.Marshal(struct {
		Protocol     string                 `json:"p"`
		Info         mcp.Implementation     `json:"i"`
		Caps         mcp.ServerCapabilities `json:"c"`
		Instructions string                 `json:"s"`
	}{r.ProtocolVersion, r.ServerInfo, r.Capabilities, r.Instructions})
	if err != nil { // only plain data: cannot fail
		return ""
	}
	return string(b)
}

// expect, arrived and fail implement streamHooks for the sse transport.
func (c *Conn) expect(id string) {
	c.mu.Lock()
	c.outstanding[id] = struct{}{}
	c.mu.Unlock()
}

// arrived reports whether a response with id answers a request of this
// connection: known is false for an id the connection never sent (or
// already got an answer for), which makes the stream invalid; late is true
// for the answer to a request the gateway gave up on, which is dropped.
func (c *Conn) arrived(id string) (known, late bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.outstanding[id]; ok {
		delete(c.outstanding, id)
		return true, false
	}
	if _, ok := c.abandoned[id]; ok {
		delete(c.abandoned, id)
		return true, true
	}
	return false, false
}

// maxAbandoned bounds how many abandoned request ids a connection
// remembers; a late answer to an older one counts as unknown.
const maxAbandoned = 1024

// forget ends the wait for id's response. If it has not arrived (the call
// timed out or was cancelled), id is remembered as abandoned, so that its
// late response is dropped instead of failing the connection.
func (c *Conn) forget(id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.outstanding[id]; !ok {
		return
	}
	delete(c.outstanding, id)
	if c.abandoned == nil {
		c.abandoned = map[string]struct{}{}
	}
	if len(c.abandonRing) >= maxAbandoned {
		delete(c.abandoned, c.abandonRing[0])
		c.abandonRing = c.abandonRing[1:]
	}
	c.abandoned[id] = struct{}{}
	c.abandonRing = append(c.abandonRing, id)
}

// fail records why the connection is unusable and fails its calls at once.
func (c *Conn) fail(err error) {
	c.mu.Lock()
	c.deadErr = cmp.Or(c.deadErr, err)
	c.mu.Unlock()
	c.kill(errConnDead)
}

func (c *Conn) deathErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadErr
}

// Alive reports whether calls may be sent on the connection.
func (c *Conn) Alive() bool { return c.dead.Err() == nil }

func (c *Conn) isStdio() bool { return c.backend.Transport == config.TransportStdio }

// legacyHTTP reports whether the connection is a sessionful HTTP one, on
// which mcp-go does not send notifications/cancelled itself.
func (c *Conn) legacyHTTP() bool {
	return !c.isStdio() && !mcp.IsModernProtocol(c.protocol)
}

// Dial connects to backend b and performs the MCP handshake within the
// initialize timeout. preferLegacy pins the sessionful 2025-11-25 revision
// for "auto" backends (falling back to negotiation if the backend refuses
// the legacy initialize: see refusedLegacy).
func (d *Dialer) Dial(ctx context.Context, b config.Backend, preferLegacy bool) (*Conn, *Error) {
	pin := ""
	switch b.Protocol {
	case config.ProtocolLegacy:
		pin = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	case config.ProtocolModern:
		pin = mcp.LATEST_PROTOCOL_VERSION
	case config.ProtocolAuto:
		if preferLegacy && b.Transport != config.TransportStdio {
			pin = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		}
	}
	c, berr := d.DialPinned(ctx, b, pin)
	if berr != nil && b.Protocol == config.ProtocolAuto && pin != "" && refusedLegacy(berr) {
		return d.DialPinned(ctx, b, "")
	}
	return c, berr
}

// refusedLegacy reports whether a failed legacy initialize means the
// backend does not serve the sessionful revision (so negotiation, which
// can reach the stateless one, is worth a try): a JSON-RPC error, or HTTP
// 400 or 405, which is how a stateless-only server refuses initialize.
func refusedLegacy(be *Error) bool {
	return be.Kind == KindJSONRPCError ||
		(be.Kind == KindHTTPStatus && (be.Status == http.StatusBadRequest || be.Status == http.StatusMethodNotAllowed))
}

// DialPinned connects to backend b speaking protocol revision pin ("" to
// negotiate), without any fallback.
func (d *Dialer) DialPinned(ctx context.Context, b config.Backend, pin string) (*Conn, *Error) {
	t := d.cfg.Timeouts
	life, lifeCancel := context.WithCancel(d.baseCtx)
	dead, kill := context.WithCancelCause(context.Background())
	c := &Conn{
		backend:     b,
		d:           d,
		life:        life,
		lifeCancel:  lifeCancel,
		dead:        dead,
		kill:        kill,
		outstanding: map[string]struct{}{},
		closed:      make(chan struct{}),
	}
	tr, err := d.newTransport(b, c)
	if err != nil {
		lifeCancel()
		kill(err)
		close(c.closed)
		return nil, &Error{Backend: b.Name, Op: "initialize", Kind: KindTransport, Cause: err.Error(), Err: err}
	}
	opts := []client.ClientOption{client.WithDiscoverTimeout(t.Initialize)}
	if pin != "" {
		opts = append(opts, client.WithProtocolVersion(pin))
	}
	c.client = client.NewClient(tr, opts...)
	if b.Transport == config.TransportSSE {
		c.client.OnConnectionLost(func(err error) { c.fail(cmp.Or(err, errors.New("stream ended"))) })
	}

	var result *mcp.InitializeResult
	berr := c.Invoke(ctx, "initialize", t.Initialize, func(ctx context.Context) error {
		// Start may block (the SSE transport waits for its endpoint event),
		// so it runs bounded by the attempt's context; it must be given the
		// connection's lifetime context, which its stream or process keeps.
		if err := runBounded(ctx, lifeCancel, func() error { return c.client.Start(life) }); err != nil {
			return err
		}
		req := mcp.InitializeRequest{}
		req.Params.ClientInfo = d.clientInfo
		req.Params.ProtocolVersion = pin
		var err error
		result, err = c.client.Initialize(ctx, req)
		return err
	})
	if berr != nil {
		c.Close()
		return nil, berr
	}
	c.protocol = result.ProtocolVersion
	c.sessionID = c.client.GetSessionId()
	c.caps = result.Capabilities
	c.announced = announced(result)
	c.direct = c.newRawTarget()
	return c, nil
}

// runBounded runs fn, returning when it does or when ctx ends (after
// calling abort and waiting for fn, which abort must make return).
func runBounded(ctx context.Context, abort func(), fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- guarded(fn) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		abort()
		<-done
		return context.Cause(ctx)
	}
}

// backstop bounds every backend HTTP request but a long-lived stream,
// whatever its caller's context says.
func (d *Dialer) backstop() time.Duration {
	t := d.cfg.Timeouts
	return max(t.Initialize, t.Call, t.List) + 5*time.Second
}

func (d *Dialer) newTransport(b config.Backend, c *Conn) (transport.Interface, error) {
	t := d.cfg.Timeouts
	backstop := d.backstop()
	capture := &captureTransport{
		base:         d.httpBase,
		maxBytes:     d.cfg.Limits.MaxResponseBytes,
		backstop:     backstop,
		closeTimeout: t.Close,
	}
	hc := &http.Client{Transport: capture}
	switch b.Transport {
	case config.TransportStreamableHTTP:
		tr, err := transport.NewStreamableHTTP(b.URL,
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(b.Headers),
			transport.WithHTTPLogger(d.logger))
		if err != nil {
			return nil, err
		}
		c.streamable = tr
		return answeredHTTP{tr}, nil
	case config.TransportSSE:
		capture.hooks = c
		tr, err := transport.NewSSE(b.URL,
			transport.WithHTTPClient(hc),
			transport.WithHeaders(b.Headers),
			transport.WithSSELogger(d.logger),
			transport.WithEndpointTimeout(t.Initialize),
			transport.WithResponseTimeout(backstop))
		if err != nil {
			return nil, err
		}
		return answeredSSE{tr}, nil
	case config.TransportStdio:
		return d.newStdioTransport(b, c)
	default:
		return nil, fmt.Errorf("unknown transport %q", b.Transport)
	}
}

// Invoke runs one backend request fn (which uses Client): bounded by timeout, cut off when the
// connection dies, and classified on failure. A request the gateway gives
// up on (timeout, client cancel) is announced to the backend with
// notifications/cancelled.
func (c *Conn) Invoke(ctx context.Context, op string, timeout time.Duration, fn func(context.Context) error) *Error {
	return c.InvokeOwned(ctx, nil, nil, op, timeout, fn)
}

// InvokeOwned is Invoke, cut off with ownerCause too when owner ends (a
// session's member closing): what a caller would otherwise do with a
// context of its own around Invoke, one cancelable context less per
// request. A nil owner is Invoke.
func (c *Conn) InvokeOwned(ctx, owner context.Context, ownerCause error, op string, timeout time.Duration, fn func(context.Context) error) *Error {
	if !c.Alive() {
		f := failure{err: errConnDead, cause: errConnDead, deadErr: c.deathErr(), stdio: c.isStdio()}
		return c.finish(op, classify(f))
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// A caller that already bounds the request as tightly (a session's
	// attempt, with the same timeout) needs no second timer.
	tctx := actx
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > timeout {
		var tcancel context.CancelFunc
		tctx, tcancel = context.WithTimeoutCause(actx, timeout, ErrCallTimeout)
		defer tcancel()
	}
	stop := context.AfterFunc(c.dead, func() { cancel(errConnDead) })
	defer stop()
	if owner != nil {
		stopOwner := context.AfterFunc(owner, func() { cancel(ownerCause) })
		defer stopOwner()
	}

	tr := &callTrace{}
	err := guarded(func() error { return fn(withTrace(tctx, tr)) })
	snap := tr.snapshot()
	if c.backend.Transport == config.TransportSSE {
		c.forget(snap.requestID)
	}
	if err == nil {
		return nil
	}
	cause := settledCause(ctx, tctx)
	if cause == nil && !c.Alive() {
		// The connection died (e.g. a validator found bad output) and
		// the transport noticed before the AfterFunc above ran.
		cause = errConnDead
	}
	f := failure{
		err:       err,
		cause:     cause,
		timeout:   timeout,
		timedOut:  errors.Is(cause, ErrCallTimeout),
		trace:     snap,
		deadErr:   c.deathErr(),
		stdio:     c.isStdio(),
		handshake: op == "initialize",
	}
	if od := (*openDeadline)(nil); errors.As(cause, &od) {
		// The opening's overall bound (initialize timeout) passed first.
		f.timedOut, f.timeout = true, od.d
	}
	if cause != nil && !f.timedOut && !errors.Is(cause, errConnDead) && !errors.Is(cause, ErrSessionClosing) {
		// The caller's context ended the attempt: read only once the
		// attempt's context has ended too (settledCause), so a request
		// that failed on its own in the meantime is not blamed on it.
		f.parentErr = ctx.Err()
	}
	be := classify(f)
	if (f.timedOut || f.parentErr != nil) && snap.requestID != "" && c.legacyHTTP() && op != "initialize" {
		c.notifyCancelled(snap.requestID, be.Cause)
	}
	if c.isStdio() && be.Kind == KindConnectionClosed {
		c.fail(err)
	}
	if f.timedOut {
		c.dropIdleConns()
		c.probeAfterTimeout(op, timeout)
	}
	if pe := (*clientPanicError)(nil); errors.As(err, &pe) {
		// The client's state can no longer be trusted: the next call
		// re-initializes instead of panicking again.
		if c.d.logger != nil {
			c.d.logger.Error("backend request panicked in the MCP client", "backend", c.backend.Name, "op", op, "panic", pe.value, "stack", string(pe.stack))
		}
		c.fail(err)
	}
	return c.finish(op, be)
}

// dropIdleConns closes the idle pooled HTTP connections after a call
// timed out: it may have gone out on a kept-alive connection to an
// address the backend no longer has (a partition, a container back on a
// new address), and each other such connection in the pool would cost
// one more call the whole timeout. The others' backends pay one TCP
// connect at most.
func (c *Conn) dropIdleConns() {
	if c.isStdio() {
		return
	}
	if ci, ok := c.d.httpBase.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
	c.d.raw.closeIdle()
}

// settleBound bounds settledCause's wait for a cancellation under way.
const settleBound = time.Second

// settledCause returns why the attempt's context tctx (derived from the
// caller's ctx) ended, nil if it has not. When the attempt's deadline has
// passed or the caller's context has ended, its cancellation is under way
// (a due timer, a parent's cancel reaching its children) and is waited
// for: the request can fail first, as mcp-go's SSE transport does from its
// own timer armed for the very same deadline, and reading the caller's
// Err before the attempt's cause mistook such a timeout for a client's
// cancel (issue 12 item 5).
func settledCause(ctx, tctx context.Context) error {
	if cause := context.Cause(tctx); cause != nil {
		return cause
	}
	dl, ok := tctx.Deadline()
	if ctx.Err() == nil && (!ok || time.Now().Before(dl)) {
		return nil
	}
	t := time.NewTimer(settleBound)
	defer t.Stop()
	select {
	case <-tctx.Done():
	case <-t.C: // never hang on a context that breaks its contract
	}
	return context.Cause(tctx)
}

func (c *Conn) finish(op string, be *Error) *Error {
	be.Backend, be.Op = c.backend.Name, op
	return be
}

// notifyCancelled tells the backend the gateway gave up on request id.
// mcp-go does not send this over HTTP. It is sent in the background,
// bounded by the close timeout; close waits for it.
func (c *Conn) notifyCancelled(id, reason string) {
	c.mu.Lock()
	if c.bgClosed {
		c.mu.Unlock()
		return // closing: the connection is going away anyway
	}
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		ctx, cancel := context.WithTimeout(c.life, c.d.cfg.Timeouts.Close)
		defer cancel()
		n := mcp.JSONRPCNotification{
			JSONRPC: mcp.JSONRPC_VERSION,
			Notification: mcp.Notification{
				Method: string(mcp.MethodNotificationCancelled),
				Params: mcp.NotificationParams{AdditionalFields: map[string]any{
					"requestId": json.RawMessage(id),
					"reason":    reason,
				}},
			},
		}
		if err := guarded(func() error { return c.client.GetTransport().SendNotification(ctx, n) }); err != nil {
			c.d.logger.Debug("notifications/cancelled not delivered", "backend", c.backend.Name, "err", err)
		}
	}()
}

// Close shuts the connection down without blocking the caller: in-flight
// calls fail at once (kind closed); the transport gets the close timeout
// to end gracefully (DELETE, stdin close) and is then cut off. The
// returned channel is closed when everything the connection started has
// ended.
func (c *Conn) Close() <-chan struct{} {
	c.closeOnce.Do(func() {
		c.fail(ErrSessionClosing)
		go func() {
			defer close(c.closed)
			ctx, cancel := context.WithTimeout(context.Background(), c.d.cfg.Timeouts.Close)
			defer cancel()
			// Past the close timeout, lifeCancel kills a stdio process and
			// ends an SSE stream.
			_ = runBounded(ctx, c.lifeCancel, func() error {
				if c.client == nil {
					return nil
				}
				return c.client.Close()
			})
			c.lifeCancel()
			c.mu.Lock()
			c.bgClosed = true
			c.mu.Unlock()
			c.bg.Wait()
		}()
	})
	return c.closed
}
