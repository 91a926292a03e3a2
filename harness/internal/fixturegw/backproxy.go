package main

import (
	"bufio"
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
	"sync/atomic"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// backProxy sits between the gateway and one HTTP backend (the fixture
// rewrites the backend's URL to it) and reproduces what some real
// gateways' backend clients do:
//
//   - acceptWrongID: an answer on a streamable-HTTP POST that carries
//     another request's id is taken as the answer (its id is set to the
//     request's), so the gateway forwards a forged answer as a success;
//   - neverBack: once the backend ends an SSE session stream itself (a
//     restart), the backend is never served again: every later request to
//     it fails at the connection (deadSilent: is held, never answered);
//   - slowReopen: every initialize after the backend's first is held this
//     long (a gateway re-opening a session on a loaded machine);
//   - noResume: the gateway's backend client never resumes a response
//     stream: a GET carrying Last-Event-ID (mcp-go's resumption, SEP-1699)
//     is answered 405 here and never reaches the backend, so the call
//     fails ("failed to resume the SSE stream for the response");
//   - slowRecovery: once the backend answers 404 for a session (it
//     restarted, or expired the session), it is refused (HTTP 503) for
//     this long: its tools fail until then, as a gateway that rebuilds a
//     backend's client only after a pause; with slowRecoveryDial, also
//     once a connection to the backend fails (it crashed, or is
//     restarting), as the public gateway the issue-41 notes measured (its
//     tools gone for about 30 s after a connection failure, a restart or
//     an expiry).
type backProxy struct {
	backProxyOptions
	rp        *httputil.ReverseProxy
	sse       bool
	dead      atomic.Bool
	inits     atomic.Int64
	downUntil atomic.Int64 // unix nanoseconds (slowRecovery)
}

// backProxyOptions are what a backProxy reproduces.
type backProxyOptions struct {
	acceptWrongID, neverBack, noResume bool
	// deadSilent (with neverBack): a backend never served again holds
	// every request unanswered instead of closing its connection.
	deadSilent               bool
	slowReopen, slowRecovery time.Duration
	// slowRecoveryDial (with slowRecovery): a failed connection to the
	// backend starts the refusal too.
	slowRecoveryDial bool
}

// startBackProxies puts a backProxy in front of every HTTP backend of cfg
// (rewriting its URL) and returns the servers to close.
func startBackProxies(cfg *config.Config, opts backProxyOptions) ([]*http.Server, error) {
	var servers []*http.Server
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		if b.URL == "" {
			continue
		}
		up, err := url.Parse(b.URL)
		if err != nil {
			return servers, err
		}
		p := &backProxy{backProxyOptions: opts, sse: b.Transport == config.TransportSSE}
		p.rp = &httputil.ReverseProxy{
			Rewrite: func(r *httputil.ProxyRequest) {
				r.SetURL(&url.URL{Scheme: up.Scheme, Host: up.Host})
				r.Out.Host = up.Host
			},
			FlushInterval:  -1,
			ModifyResponse: p.modify,
			ErrorHandler:   p.proxyError,
			ErrorLog:       log.New(io.Discard, "", 0),
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return servers, err
		}
		srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		servers = append(servers, srv)
		b.URL = (&url.URL{Scheme: "http", Host: ln.Addr().String(), Path: up.Path, RawQuery: up.RawQuery}).String()
	}
	return servers, nil
}

func (p *backProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.dead.Load() && p.deadSilent {
		// Never served again, and never answered: the request is held
		// until the gateway gives up on it (or the proxy closes).
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 16<<20))
		<-r.Context().Done()
		return
	}
	if p.dead.Load() {
		// Never served again: the connection ends without an answer.
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		http.Error(w, "backend gone", http.StatusBadGateway)
		return
	}
	if p.noResume && r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		http.Error(w, "this client does not resume streams", http.StatusMethodNotAllowed)
		return
	}
	if time.Now().UnixNano() < p.downUntil.Load() {
		http.Error(w, "backend recovering", http.StatusServiceUnavailable)
		return
	}
	var reqID json.RawMessage
	if (p.acceptWrongID && !p.sse || p.slowReopen > 0) && r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		ok := json.Unmarshal(body, &msg) == nil
		if p.acceptWrongID && !p.sse && ok && len(msg.ID) > 0 && string(msg.ID) != "null" {
			reqID = msg.ID
		}
		if p.slowReopen > 0 && ok && msg.Method == "initialize" && p.inits.Add(1) > 1 {
			t := time.NewTimer(p.slowReopen)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
	}
	p.rp.ServeHTTP(w, r.WithContext(withRequestID(r.Context(), reqID)))
}

// proxyError answers a request the backend could not be reached for (as
// httputil.ReverseProxy does by default: 502) and, with slowRecoveryDial,
// starts the slow recovery.
func (p *backProxy) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if p.slowRecovery > 0 && p.slowRecoveryDial && r.Context().Err() == nil {
		p.downUntil.Store(time.Now().Add(p.slowRecovery).UnixNano())
	}
	http.Error(w, "backend unreachable: "+err.Error(), http.StatusBadGateway)
}

// modify rewrites an answer's wrong id (acceptWrongID) and watches an SSE
// session stream's end (neverBack).
func (p *backProxy) modify(resp *http.Response) error {
	req := resp.Request
	if p.slowRecovery > 0 && resp.StatusCode == http.StatusNotFound && req.Header.Get("Mcp-Session-Id") != "" {
		p.downUntil.Store(time.Now().Add(p.slowRecovery).UnixNano())
	}
	if p.neverBack && p.sse && req.Method == http.MethodGet {
		resp.Body = &endWatcher{ReadCloser: resp.Body, onEOF: func() { p.dead.Store(true) }}
		return nil
	}
	reqID := requestID(req.Context())
	if reqID == nil {
		return nil
	}
	resp.Body = &idRewriter{src: bufio.NewReader(resp.Body), closer: resp.Body, id: reqID}
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return nil
}

// endWatcher calls onEOF when the upstream ends the body itself (EOF or a
// read error, not the gateway closing or cancelling it).
type endWatcher struct {
	io.ReadCloser
	onEOF  func()
	closed atomic.Bool
}

func (e *endWatcher) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, context.Canceled) && !e.closed.Load() {
		e.onEOF()
	}
	return n, err
}

func (e *endWatcher) Close() error {
	e.closed.Store(true)
	return e.ReadCloser.Close()
}

// idRewriter passes a JSON body or an event stream through line by line,
// setting the id of every JSON-RPC response in it to id.
type idRewriter struct {
	src    *bufio.Reader
	closer io.Closer
	id     json.RawMessage
	buf    []byte
	err    error
}

func (r *idRewriter) Read(p []byte) (int, error) {
	for len(r.buf) == 0 && r.err == nil {
		line, err := r.src.ReadBytes('\n')
		r.buf, r.err = rewriteID(line, r.id), err
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	if len(r.buf) == 0 && r.err != nil {
		return n, r.err
	}
	return n, nil
}

func (r *idRewriter) Close() error { return r.closer.Close() }

// rewriteID sets the id of a JSON-RPC response on line (a JSON body, or
// an event stream's data line) to id; other lines pass unchanged.
func rewriteID(line []byte, id json.RawMessage) []byte {
	prefix, body := []byte(nil), bytes.TrimSpace(line)
	if rest, ok := bytes.CutPrefix(body, []byte("data:")); ok {
		prefix, body = []byte("data: "), bytes.TrimSpace(rest)
	}
	if len(body) == 0 || body[0] != '{' {
		return line
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m["jsonrpc"] == nil || (m["result"] == nil && m["error"] == nil) || m["method"] != nil {
		return line
	}
	if bytes.Equal(m["id"], id) {
		return line
	}
	m["id"] = id
	out, err := json.Marshal(m)
	if err != nil {
		return line
	}
	suffix := line[len(bytes.TrimRight(line, "\r\n")):]
	return append(append(prefix, out...), suffix...)
}

type requestIDKey struct{}

func withRequestID(ctx context.Context, id json.RawMessage) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// requestID is the JSON-RPC id of the request a proxied answer is for
// (nil when none is rewritten).
func requestID(ctx context.Context) json.RawMessage {
	id, _ := ctx.Value(requestIDKey{}).(json.RawMessage)
	return id
}
