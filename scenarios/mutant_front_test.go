package scenarios_test

// The front of a behaviour mutant: the reference vMCP behind a proxy
// whose policy misbehaves in one way (answers some calls itself, holds
// error answers back, rewrites the admin API's answers), and optionally
// a proxy between the gateway and beta (a backend-side policy). Each
// mutant of the check table (mutant_table_test.go) is one policy.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// rpcMsg is what a policy reads of a POSTed JSON-RPC message.
type rpcMsg struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Name      string `json:"name"`
		URI       string `json:"uri"`
		Arguments struct {
			ToolName string `json:"tool_name"` // the optimizer's call_tool
		} `json:"arguments"`
	} `json:"params"`
	// session is the client's Mcp-Session-Id ("" for none).
	session string
	// backend is the backend the tool, prompt or resource belongs to (by
	// the reference's "beta_echo" and "mem://beta/readme"; call_tool's by
	// the tool it calls), else "".
	backend string
	// answerText is the text of the gateway's answer (its error message,
	// or its result's first text), once it answered.
	answerText string
}

// addressedBackend is the backend of a tool, prompt or resource name.
func addressedBackend(name, uri string) string {
	for _, b := range []string{"alpha", "beta", "gamma"} {
		if strings.HasPrefix(name, b+"_") || strings.Contains(uri, "://"+b+"/") {
			return b
		}
	}
	return ""
}

// frontPolicy is how a mutant's front proxy misbehaves. Its methods may
// be called concurrently.
type frontPolicy interface {
	// before may answer m itself (a JSON-RPC error message, not
	// forwarded); "" forwards it.
	before(m rpcMsg) (errorText string)
	// after is told the gateway's answer to m: failed (a JSON-RPC error
	// or an isError result) or abandoned (the client went away first).
	// It returns how long to hold the answer back.
	after(m rpcMsg, failed, abandoned bool) time.Duration
}

// adminRewriter is a policy that also rewrites the admin API's answers
// (GETs other than the MCP endpoint).
type adminRewriter interface {
	admin(path string, body []byte) []byte
}

// answerRewriter is a policy that may rewrite the gateway's answer to m
// (a JSON-RPC message): it returns the message the client gets instead,
// or nil to leave the answer as it is.
type answerRewriter interface {
	rewrite(m rpcMsg, answer map[string]any) map[string]any
}

// lostSessionRewriter is a policy that answers a request the gateway
// refused with an HTTP 4xx (a session it lost) itself: it returns the
// message the client gets instead, or nil.
type lostSessionRewriter interface {
	lostSession(m rpcMsg) map[string]any
}

// detacher is a policy whose gateway is never told the client went away:
// the call to the gateway goes on after the client cancelled it.
type detacher interface{ detach() bool }

// mutantTarget is a behaviour mutant: the reference behind a front proxy
// with a fresh policy per topology and, when back is set, beta reached
// through a proxy with the same policy (its backPolicy side).
type mutantTarget struct {
	name   string
	inner  targets.Reference
	policy func() frontPolicy
	back   bool
}

func (m *mutantTarget) Name() string                       { return m.name }
func (m *mutantTarget) Capabilities() targets.Capabilities { return m.inner.Capabilities() }

func (m *mutantTarget) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	front := m.policy()
	inner := m.inner
	inner.TargetName = m.name
	var backProxy *http.Server
	if back, ok := front.(backPolicy); ok && m.back {
		var beta string
		for _, b := range topo.Backends {
			if b.Name == "beta" {
				beta = b.URL
			}
		}
		srv, proxied, err := startBackProxy(beta, back)
		if err != nil {
			return nil, err
		}
		backProxy = srv
		configure := inner.Configure
		inner.Configure = func(cfg *vmcp.Config) {
			for i := range cfg.Backends {
				if cfg.Backends[i].Name == "beta" {
					cfg.Backends[i].URL = proxied
				}
			}
			if configure != nil {
				configure(cfg)
			}
		}
	}
	gw, err := inner.Start(ctx, topo)
	if err != nil {
		_ = closeServer(ctx, backProxy)
		return nil, err
	}
	return startFront(ctx, gw, front, backProxy)
}

// startFront puts the policy's proxy in front of gw; closing it closes gw
// and the backend-side proxy.
func startFront(ctx context.Context, gw targets.Gateway, pol frontPolicy, back *http.Server) (targets.Gateway, error) {
	u, err := url.Parse(gw.BaseURL())
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if err = errors.Join(err, lerr); err != nil {
		_ = gw.Close(ctx)
		_ = closeServer(ctx, back)
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	f := &front{pol: pol, rp: rp}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = f.srv.Serve(ln) }()
	return &frontGateway{inner: gw, front: f, back: back, base: "http://" + ln.Addr().String()}, nil
}

type front struct {
	pol      frontPolicy
	rp       *httputil.ReverseProxy
	srv      *http.Server
	detached sync.WaitGroup // forwarded calls: one the client abandoned may outlive its handler
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del("Accept-Encoding") // answers the policy reads and rewrites come plain
	if r.Method != http.MethodPost {
		ar, ok := f.pol.(adminRewriter)
		if !ok || r.Method != http.MethodGet || strings.HasSuffix(r.URL.Path, "/mcp") {
			f.rp.ServeHTTP(w, r) // streams (the legacy GET stream) pass through
			return
		}
		buf := &answerBuffer{header: http.Header{}}
		f.rp.ServeHTTP(buf, r)
		out := ar.admin(r.URL.Path, bytes.Clone(buf.body.Bytes()))
		buf.body.Reset()
		buf.body.Write(out)
		buf.writeTo(w)
		return
	}
	m, ok := readRPC(w, r)
	if !ok {
		return
	}
	m.backend, m.session = addressedBackend(m.Params.Name, m.Params.URI), r.Header.Get("Mcp-Session-Id")
	if m.Params.Name == "call_tool" {
		m.backend = addressedBackend(m.Params.Arguments.ToolName, "")
	}
	if text := f.pol.before(m); text != "" {
		if len(m.ID) == 0 { // a notification: taken, never forwarded
			w.WriteHeader(http.StatusAccepted)
			return
		}
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32603, "message": text}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return
	}
	ctx := r.Context()
	if d, ok := f.pol.(detacher); ok && d.detach() {
		ctx = context.WithoutCancel(ctx)
	}
	buf := &answerBuffer{header: http.Header{}}
	done := make(chan struct{})
	f.detached.Add(1)
	go func() {
		defer f.detached.Done()
		defer close(done)
		f.rp.ServeHTTP(buf, r.WithContext(ctx))
	}()
	select {
	case <-done:
	case <-r.Context().Done():
		f.pol.after(m, false, true)
		return
	}
	answer := answerOf(buf)
	m.answerText = textOf(answer)
	hold := f.pol.after(m, buf.status >= 400 || failedMessage(answer), false)
	if rw, ok := f.pol.(answerRewriter); ok && answer != nil {
		if out := rw.rewrite(m, answer); out != nil {
			body, _ := json.Marshal(out)
			buf = &answerBuffer{header: http.Header{"Content-Type": {"application/json"}}}
			buf.body.Write(body)
		}
	}
	if ls, ok := f.pol.(lostSessionRewriter); ok && buf.status >= 400 && buf.status < 500 {
		if out := ls.lostSession(m); out != nil {
			body, _ := json.Marshal(out)
			buf = &answerBuffer{header: http.Header{"Content-Type": {"application/json"}}}
			buf.body.Write(body)
		}
	}
	if hold > 0 {
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	buf.writeTo(w)
}

// readRPC reads a POSTed JSON-RPC message (restoring the body for the
// proxy); on a body it cannot read it answers 400 and reports false.
func readRPC(w http.ResponseWriter, r *http.Request) (rpcMsg, bool) {
	var m rpcMsg
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	r.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return m, false
	}
	_ = json.Unmarshal(body, &m)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return m, true
}

// answerBuffer holds a whole answer of the gateway.
type answerBuffer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *answerBuffer) Header() http.Header         { return b.header }
func (b *answerBuffer) Write(p []byte) (int, error) { return b.body.Write(p) }
func (b *answerBuffer) WriteHeader(status int)      { b.status = status }

func (b *answerBuffer) writeTo(w http.ResponseWriter) {
	for k, v := range b.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(b.body.Len()))
	w.WriteHeader(max(b.status, http.StatusOK))
	_, _ = w.Write(b.body.Bytes())
}

// answerOf is the JSON-RPC answer in a buffered answer (plain JSON, or
// the last message with an id on an event stream's data lines), or nil.
func answerOf(b *answerBuffer) map[string]any {
	var answer map[string]any
	for _, line := range strings.Split(b.body.String(), "\n") {
		line = strings.TrimPrefix(strings.TrimSpace(line), "data: ")
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["id"] != nil {
			answer = m
		}
	}
	return answer
}

// textOf is a JSON-RPC answer's error message, or its result's first
// text ("" for none).
func textOf(answer map[string]any) string {
	if e, ok := answer["error"].(map[string]any); ok {
		msg, _ := e["message"].(string)
		return msg
	}
	res, _ := answer["result"].(map[string]any)
	content, _ := res["content"].([]any)
	for _, c := range content {
		if text, ok := c.(map[string]any)["text"].(string); ok {
			return text
		}
	}
	return ""
}

// failedMessage reports whether a JSON-RPC answer is an error or an
// isError result.
func failedMessage(answer map[string]any) bool {
	if answer == nil {
		return false
	}
	if e, ok := answer["error"]; ok && e != nil {
		return true
	}
	res, _ := answer["result"].(map[string]any)
	isError, _ := res["isError"].(bool)
	return isError
}

type frontGateway struct {
	inner targets.Gateway
	front *front
	back  *http.Server
	base  string
}

func (g *frontGateway) MCPURL() string  { return g.base + "/mcp" }
func (g *frontGateway) BaseURL() string { return g.base }

func (g *frontGateway) Close(ctx context.Context) error {
	err := closeServer(ctx, g.front.srv)
	err = errors.Join(err, g.inner.Close(ctx), closeServer(ctx, g.back))
	// A call the client abandoned ends with the gateway.
	done := make(chan struct{})
	go func() { g.front.detached.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, errors.New("front proxy: calls still running after the gateway closed"))
	}
	return err
}

// closeServer shuts srv down within 5 s, closing it after that.
func closeServer(ctx context.Context, srv *http.Server) error {
	if srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close()
	}
	return err
}
