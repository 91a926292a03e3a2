package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Revision is the MCP protocol revision a client speaks.
type Revision string

// Revisions.
const (
	// RevisionModern is the stateless 2026-07-28 revision (mcp-go's
	// default; it falls back to initialize against a legacy server).
	RevisionModern Revision = "modern"
	// RevisionLegacy pins 2025-11-25 (initialize, Mcp-Session-Id).
	RevisionLegacy Revision = "legacy"
)

// Revisions lists both revisions, for scenarios that run on each.
var Revisions = []Revision{RevisionLegacy, RevisionModern}

// DefaultCallTimeout is the deadline of a client call whose ctx has none
// (or a later one).
const DefaultCallTimeout = 10 * time.Second

// ClientOption configures a Client.
type ClientOption func(*clientOptions)

type clientOptions struct {
	name         string
	timeout      time.Duration
	closeGrace   time.Duration
	headers      map[string]string
	backends     []string
	cancelNotify *bool
	transport    func(*http.Transport) http.RoundTripper
}

// WithTransport lets the caller adapt the client's HTTP transport: wrap
// gets the transport the client would use (its own dialer, which tracks
// connections) and returns the round tripper to use instead, e.g. with
// the TLS configuration and credentials of a Kubernetes API server whose
// service proxy reaches the gateway.
func WithTransport(wrap func(*http.Transport) http.RoundTripper) ClientOption {
	return func(o *clientOptions) { o.transport = wrap }
}

// WithCancelNotifications says whether a call whose ctx ends before its
// answer is followed by a notifications/cancelled naming its request id
// (the 2025-11-25 way to cancel a request; mcp-go sends none over HTTP).
// Default: on for RevisionLegacy, off for RevisionModern, where ending the
// request's stream is the cancellation.
func WithCancelNotifications(on bool) ClientOption {
	return func(o *clientOptions) { o.cancelNotify = &on }
}

// WithCallTimeout sets the deadline applied to every call (default
// DefaultCallTimeout). A ctx with an earlier deadline wins.
func WithCallTimeout(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.timeout = d }
}

// WithClientName names the client in recorded calls (default c1, c2, ...).
func WithClientName(name string) ClientOption {
	return func(o *clientOptions) { o.name = name }
}

// WithCloseGrace is how long Close lets mcp-go end the session (DELETE)
// before it cuts the client's connections (default 1 s).
func WithCloseGrace(d time.Duration) ClientOption {
	return func(o *clientOptions) { o.closeGrace = d }
}

// WithHeaders adds HTTP headers to every request (e.g. Authorization).
func WithHeaders(h map[string]string) ClientOption {
	return func(o *clientOptions) { o.headers = h }
}

// WithBackends names the topology's backends, so that calls whose error
// text names one of them are classified backend_unavailable whatever the
// gateway's wording (Env.Client sets it).
func WithBackends(names ...string) ClientOption {
	return func(o *clientOptions) { o.backends = names }
}

// Client is a real mcp-go client whose calls always have a deadline and
// are recorded on a Recorder. It is safe for concurrent use.
type Client struct {
	mcp   *client.Client
	rec   *Recorder
	rev   Revision
	opts  clientOptions
	conns *connTracker

	closeOnce sync.Once
	closeErr  error
	bg        sync.WaitGroup // notifications/cancelled being sent

	// next, once set (Adopt), is the client whose session this one goes
	// on with: every call, and every question about the session, goes
	// there.
	next atomic.Pointer[Client]
}

// live is the client whose session c goes on with: c, or the one it
// adopted (and the one that one adopted, ...).
func (c *Client) live() *Client {
	for n := c.next.Load(); n != nil; n = c.next.Load() {
		c = n
	}
	return c
}

// Adopt makes c go on with fresh's session: c's own session, which the
// gateway kept broken, is closed (within ctx), and every later call on c
// is made, and recorded, as fresh's (under fresh's name). Whoever holds c
// goes on with a working session without a check being judged twice on
// the broken one. fresh must not be c, nor a client that adopted c.
func (c *Client) Adopt(ctx context.Context, fresh *Client) {
	old := c.live()
	if fresh == nil || fresh.live() == old {
		return
	}
	c.rec.Note("%s goes on with the session of %s (%s's session was kept broken by the gateway)", old.opts.name, fresh.opts.name, old.opts.name)
	old.next.Store(fresh)
	if old != c {
		c.next.Store(fresh)
	}
	_ = old.closeSelf(ctx)
}

// Call is the outcome of one client call: the recorded CallRecord plus the
// typed result (one of Result, Resource, Prompt, Tools) and the error.
type Call struct {
	CallRecord
	// Result is set by CallTool.
	Result *mcp.CallToolResult `json:"-"`
	// Resource is set by ReadResource.
	Resource *mcp.ReadResourceResult `json:"-"`
	// Prompt is set by GetPrompt.
	Prompt *mcp.GetPromptResult `json:"-"`
	// Tools is set by ListTools.
	Tools *mcp.ListToolsResult `json:"-"`
	// Resources is set by ListResources.
	Resources *mcp.ListResourcesResult `json:"-"`
	// Prompts is set by ListPrompts.
	Prompts *mcp.ListPromptsResult `json:"-"`
	// Err is the error the call returned.
	Err error `json:"-"`
	// Seq is the Seq of the call's event on the recorder (a check's
	// evidence).
	Seq int `json:"-"`

	rec *Recorder
}

// Recorder returns the recorder the call was recorded on.
func (c *Call) Recorder() *Recorder { return c.rec }

// Text returns the text of a tool result, or the error text.
func (c *Call) Text() string {
	if c.Result != nil {
		return ResultText(c.Result)
	}
	return c.Error
}

var clientSeq, markerSeq atomic.Int64

// markerMeta is a fresh call marker as the request's _meta.
func markerMeta(call *Call) *mcp.Meta {
	call.Marker = fmt.Sprintf("m%d-%d", os.Getpid(), markerSeq.Add(1))
	return &mcp.Meta{AdditionalFields: map[string]any{faults.MarkerKey: call.Marker}}
}

// Dial connects a client to a gateway's MCP endpoint (streamable HTTP) and
// initializes it on the given revision, recording the initialize as a call.
// ctx bounds the connection and initialize (default: the call timeout).
func Dial(ctx context.Context, mcpURL string, rev Revision, rec *Recorder, opts ...ClientOption) (*Client, error) {
	o := clientOptions{timeout: DefaultCallTimeout, closeGrace: time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	rev = cmp.Or(rev, RevisionModern)
	if o.name == "" {
		o.name = fmt.Sprintf("c%d", clientSeq.Add(1))
	}
	if rec == nil {
		rec = NewRecorder("")
	}
	conns := &connTracker{conns: map[net.Conn]struct{}{}}
	base := &http.Transport{
		DialContext:         conns.dial,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	var rt http.RoundTripper = base
	if o.transport != nil {
		rt = o.transport(base)
	}
	httpClient := &http.Client{Transport: idCapture{rt}}
	// mcp-go's own log lines (e.g. "failed to send close request") go to
	// the scenario's timeline, never to stdout/stderr where they would
	// interleave with a verdict table.
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(httpClient),
		transport.WithLogger(slog.New(&noteHandler{rec: rec, client: o.name}))}
	if len(o.headers) > 0 {
		topts = append(topts, transport.WithHTTPHeaders(o.headers))
	}
	tr, err := transport.NewStreamableHTTP(mcpURL, topts...)
	if err != nil {
		return nil, fmt.Errorf("harness: client %s: %w", o.name, err)
	}
	// A modern client's server/discover probe is bounded by 3 s.
	copts := []client.ClientOption{client.WithDiscoverTimeout(3 * time.Second)}
	protocol := mcp.LATEST_PROTOCOL_VERSION
	if rev == RevisionLegacy {
		protocol = mcp.LATEST_LEGACY_PROTOCOL_VERSION
		copts = append(copts, client.WithProtocolVersion(protocol))
	}
	c := &Client{mcp: client.NewClient(tr, copts...), rec: rec, rev: rev, opts: o, conns: conns}
	if err := c.mcp.Start(context.Background()); err != nil {
		_ = c.Close(context.Background())
		return nil, fmt.Errorf("harness: client %s: start: %w", o.name, err)
	}
	call := c.do(ctx, "initialize", "", func(ctx context.Context, call *Call) (bool, string, map[string]any, error) {
		res, err := c.mcp.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
			ProtocolVersion: protocol,
			ClientInfo:      mcp.Implementation{Name: "vmcp-chaos-harness", Version: "1"},
		}})
		return false, "", resultMeta(res), err
	})
	if call.Err != nil {
		_ = c.Close(context.Background())
		return nil, fmt.Errorf("harness: client %s: initialize (%s) %s: %w", o.name, rev, mcpURL, call.Err)
	}
	if a := c.Agreed(); a != "" {
		rec.AddAgreed(a)
	}
	return c, nil
}

// MCP returns the underlying mcp-go client (its calls are not recorded).
func (c *Client) MCP() *client.Client { return c.live().mcp }

// Name returns the client's name in recorded calls.
func (c *Client) Name() string { return c.live().opts.name }

// Revision returns the revision the client asked for.
func (c *Client) Revision() Revision { return c.live().rev }

// ProtocolVersion returns the negotiated protocol version.
func (c *Client) ProtocolVersion() string { return c.live().mcp.ProtocolVersion() }

// Offers reports whether the gateway advertised the capability of an MCP
// method's family at initialize: "tools", "resources" or "prompts" (any
// method under it, e.g. resources/read). Other families are offered.
func (c *Client) Offers(method string) bool {
	caps := c.live().mcp.GetServerCapabilities()
	family, _, _ := strings.Cut(method, "/")
	switch family {
	case "tools":
		return caps.Tools != nil
	case "resources":
		return caps.Resources != nil
	case "prompts":
		return caps.Prompts != nil
	}
	return true
}

// notOffered says why the gateway does not offer method to this client
// (CallRecord.NotOffered), from its initialize capabilities and, for
// resources and prompts, a -32601 answer (a tools/call answered -32601 is
// a gateway's answer about one tool, judged as such).
func (c *Client) notOffered(method string, err error) string {
	if method == "initialize" {
		return ""
	}
	family, _, _ := strings.Cut(method, "/")
	if !c.Offers(method) {
		return "the gateway does not advertise " + family + " at initialize"
	}
	if family != "tools" && errors.Is(err, mcp.ErrMethodNotFound) {
		return "the gateway answered " + method + " with -32601 (method not found): it does not offer " + family
	}
	return ""
}

// Stateless reports whether the gateway agreed a stateless protocol
// revision (2026-07-28 or later) with the client. A modern client may be
// agreed an older, stateful one: what it was agreed decides which checks
// apply (a session that survives, cancellation by notification), never
// what it asked for.
func (c *Client) Stateless() bool { return mcp.IsModernProtocol(c.ProtocolVersion()) }

// Agreed says which protocol the client asked for and which it was
// agreed when they differ ("modern→2025-06-18"), else "".
func (c *Client) Agreed() string {
	c = c.live()
	asked := mcp.LATEST_PROTOCOL_VERSION
	if c.rev == RevisionLegacy {
		asked = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	if v := c.ProtocolVersion(); v != "" && v != asked {
		return string(c.rev) + "→" + v
	}
	return ""
}

// SessionID returns the MCP session id ("" on a modern connection).
func (c *Client) SessionID() string { return c.live().mcp.GetSessionId() }

// Timeout returns the default call deadline.
func (c *Client) Timeout() time.Duration { return c.live().opts.timeout }

// do runs one call with a deadline and records it.
func (c *Client) do(ctx context.Context, method, target string, fn func(ctx context.Context, call *Call) (isError bool, text string, meta map[string]any, err error)) *Call {
	ctx, cancel := runtimes.WithDefaultTimeout(ctx, c.opts.timeout)
	defer cancel()
	call := &Call{CallRecord: CallRecord{Client: c.opts.name, Revision: c.rev, Method: method, Target: target}, rec: c.rec}
	if dl, ok := ctx.Deadline(); ok {
		call.Timeout = Millis(time.Until(dl))
	}
	slot := &idSlot{}
	ctx = context.WithValue(ctx, idSlotKey{}, slot)
	start := time.Now()
	isError, text, meta, err := fn(ctx, call)
	end := time.Now()
	if ctx.Err() != nil && method != "initialize" && c.sendsCancel() {
		c.notifyCancelled(ctx, slot, method, target)
	}
	call.Err = err
	facts := slot.snapshot()
	call.HTTPStatus, call.RPCCode = facts.status, facts.code
	call.Unanswered = facts.unanswered(err)
	call.ForeignAnswer = err == nil && !facts.answered && facts.foreign
	call.NotOffered = c.notOffered(method, err)
	call.Session = c.mcp.GetSessionId()
	call.Protocol = c.mcp.ProtocolVersion()
	call.Start, call.End = Millis(c.rec.Offset(start)), Millis(c.rec.Offset(end))
	call.Duration = Millis(end.Sub(start))
	classify(&call.CallRecord, isError, text, meta, err, ctx.Err(), c.opts.backends)
	call.Forged = err == nil && !isError && slices.Contains([]string{faults.ForgedText, faults.WrongIDText}, strings.TrimSpace(text))
	call.Seq = c.rec.RecordCall(call.CallRecord).Seq
	return call
}

// ListResources lists the resources (resources/list, every page) and
// records the call.
func (c *Client) ListResources(ctx context.Context) *Call {
	c = c.live()
	return c.do(ctx, "resources/list", "", func(ctx context.Context, call *Call) (bool, string, map[string]any, error) {
		res, err := c.mcp.ListResources(ctx, mcp.ListResourcesRequest{})
		call.Resources = res
		return false, "", resultMeta(res), err
	})
}

// ListPrompts lists the prompts (prompts/list, every page) and records
// the call.
func (c *Client) ListPrompts(ctx context.Context) *Call {
	c = c.live()
	return c.do(ctx, "prompts/list", "", func(ctx context.Context, call *Call) (bool, string, map[string]any, error) {
		res, err := c.mcp.ListPrompts(ctx, mcp.ListPromptsRequest{})
		call.Prompts = res
		return false, "", resultMeta(res), err
	})
}

// CallTool calls a tool (tools/call) and records the call.
func (c *Client) CallTool(ctx context.Context, name string, args map[string]any) *Call {
	c = c.live()
	return c.do(ctx, "tools/call", name, func(ctx context.Context, call *Call) (bool, string, map[string]any, error) {
		res, err := c.mcp.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args, Meta: markerMeta(call)}})
		call.Result = res
		if res == nil {
			return false, "", nil, err
		}
		return res.IsError, ResultText(res), recordedMeta(res.Meta), err
	})
}

// ReadResource reads a resource (resources/read) and records the call.
func (c *Client) ReadResource(ctx context.Context, uri string) *Call {
	c = c.live()
	return c.do(ctx, "resources/read", uri, func(ctx context.Context, call *Call) (bool, string, map[string]any, error) {
		res, err := c.mcp.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri, Meta: markerMeta(call)}})
		call.Resource = res
		return false, "", resultMeta(res), err
	})
}

// GetPrompt gets a prompt (prompts/get) and records the call.
func (c *Client) GetPrompt(ctx context.Context, name string, args map[string]string) *Call {
	c = c.live()
	return c.do(ctx, "prompts/get", name, func(ctx context.Context, call *Call) (bool, string, map[string]any, error) {
		res, err := c.mcp.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: name, Arguments: args, Meta: markerMeta(call)}})
		call.Prompt = res
		return false, "", resultMeta(res), err
	})
}

// ListTools lists the tools (tools/list, every page) and records the call.
func (c *Client) ListTools(ctx context.Context) *Call {
	c = c.live()
	return c.do(ctx, "tools/list", "", func(ctx context.Context, call *Call) (bool, string, map[string]any, error) {
		res, err := c.mcp.ListTools(ctx, mcp.ListToolsRequest{})
		call.Tools = res
		return false, "", resultMeta(res), err
	})
}

// resultMeta is the _meta fields of an MCP result (nil for a nil result).
func resultMeta[R any, P interface {
	*R
	GetResultMeta() *mcp.Meta
}](res P) map[string]any {
	if res == nil {
		return nil
	}
	return recordedMeta(res.GetResultMeta())
}

// ToolNames lists the tool names (tools/list), recording the call.
func (c *Client) ToolNames(ctx context.Context) ([]string, error) {
	call := c.ListTools(ctx)
	if call.Err != nil {
		return nil, call.Err
	}
	names := make([]string, len(call.Tools.Tools))
	for i, t := range call.Tools.Tools {
		names[i] = t.Name
	}
	return names, nil
}

// Close ends the client: it lets mcp-go end the session (DELETE) for the
// close grace, then cuts the client's connections so a stalled gateway
// cannot hold it, and waits within ctx (default 5 s). Safe to call twice.
// A client that adopted another's session (Adopt) closes that one.
func (c *Client) Close(ctx context.Context) error { return c.live().closeSelf(ctx) }

// closeSelf is Close of c's own session.
func (c *Client) closeSelf(ctx context.Context) error {
	c.closeOnce.Do(func() {
		ctx, cancel := runtimes.WithDefaultTimeout(ctx, 5*time.Second)
		defer cancel()
		waitGroup(ctx, &c.bg) // a notifications/cancelled under way (bounded: 2 s each)
		done := make(chan error, 1)
		go func() { done <- c.mcp.Close() }()
		grace := time.NewTimer(c.opts.closeGrace)
		defer grace.Stop()
		select {
		case <-done:
			c.conns.closeAll()
			return
		case <-grace.C:
		case <-ctx.Done():
		}
		c.conns.closeAll()
		select {
		case <-done:
		case <-ctx.Done():
			c.closeErr = fmt.Errorf("harness: client %s: close did not return: %w", c.opts.name, ctx.Err())
		}
	})
	return c.closeErr
}

// connTracker remembers a client's connections so Close can cut them.
type connTracker struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		conn.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: conn, t: t}
	t.conns[tc] = struct{}{}
	return tc, nil
}

func (t *connTracker) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := slices.Collect(maps.Keys(t.conns))
	t.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

type trackedConn struct {
	net.Conn
	t    *connTracker
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return c.Conn.Close()
}
