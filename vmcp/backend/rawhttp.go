package backend

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// The direct forward's own HTTP/1.1 client (rawhttp.go). net/http's
// Transport hands each request to two goroutines per connection (its
// read and write loops) through channels, which under the call load cost
// the gateway about a fifth of its CPU. Here the calling goroutine
// writes the request, in one write, on a kept-alive connection and reads
// the answer itself. It is used only where it sends exactly what
// net/http would (rawTarget): a plain http:// URL without user info,
// reached without a proxy, and headers that net/http would send as they
// are; otherwise the gateway's Transport sends. The answer is read with
// net/http's own parser (http.ReadResponse); a connection goes back to
// the pool only after a whole answer read, and one found closed by the
// backend while idle is never used (alive).

// rawIdleTimeout is how long a connection may wait in the pool, as the
// gateway's Transport keeps its own (http.DefaultTransport: 90 s).
const rawIdleTimeout = 90 * time.Second

// rawMaxIdle bounds the idle connections kept per backend address, as
// the gateway's Transport does (MaxIdleConnsPerHost).
const rawMaxIdle = 64

// rawPools holds a Dialer's kept-alive connections, per address.
type rawPools struct {
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	idle   map[string][]*rawConn
	closed bool
}

type rawConn struct {
	nc   net.Conn
	raw  syscall.RawConn // nc's, for alive
	br   *bufio.Reader
	used time.Time // when it went back to the pool
}

// newRawPools returns the pools of a Dialer whose requests go through
// base: nil (no direct client) unless base is a plain *http.Transport,
// whose dialer it uses. Its connections are closed when life ends.
func newRawPools(life context.Context, base http.RoundTripper) *rawPools {
	t, ok := base.(*http.Transport)
	if !ok || !peekSupported {
		return nil
	}
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	p := &rawPools{dial: dial, idle: map[string][]*rawConn{}}
	context.AfterFunc(life, func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.closeIdle()
	})
	return p
}

// get returns a live idle connection to addr, or dials one.
func (p *rawPools) get(ctx context.Context, addr string) (*rawConn, error) {
	p.mu.Lock()
	for list := p.idle[addr]; len(list) > 0; list = p.idle[addr] {
		rc := list[len(list)-1]
		p.idle[addr] = list[:len(list)-1]
		p.mu.Unlock()
		if time.Since(rc.used) < rawIdleTimeout && rc.br.Buffered() == 0 && rc.raw != nil && alive(rc.raw) {
			return rc, nil
		}
		rc.nc.Close()
		p.mu.Lock()
	}
	p.mu.Unlock()
	nc, err := p.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	rc := &rawConn{nc: nc, br: bufio.NewReaderSize(nc, rawBufferSize)}
	if sc, ok := nc.(syscall.Conn); ok {
		rc.raw, _ = sc.SyscallConn() // nil: never reused
	}
	return rc, nil
}

// put keeps rc for the next request to addr.
func (p *rawPools) put(addr string, rc *rawConn) {
	rc.used = time.Now()
	p.mu.Lock()
	if !p.closed && len(p.idle[addr]) < rawMaxIdle {
		p.idle[addr] = append(p.idle[addr], rc)
		rc = nil
	}
	p.mu.Unlock()
	if rc != nil {
		rc.nc.Close()
	}
}

// closeIdle closes every idle connection (Conn.dropIdleConns, the
// gateway's end).
func (p *rawPools) closeIdle() {
	if p == nil {
		return
	}
	p.mu.Lock()
	idle := p.idle
	p.idle = map[string][]*rawConn{}
	p.mu.Unlock()
	for _, list := range idle {
		for _, rc := range list {
			rc.nc.Close()
		}
	}
}

// rawTarget is where and how the direct client sends a connection's
// requests: the address, and everything of a request before its
// Content-Length.
type rawTarget struct {
	addr string
	head []byte
}

// excludedHeaders are those net/http writes itself or treats specially:
// a connection configured with one of them is sent by the Transport.
var excludedHeaders = map[string]bool{
	"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true,
	"Trailer": true, "Connection": true, "Accept-Encoding": true, "Expect": true,
	"Proxy-Connection": true, "Upgrade": true, "Te": true, "Keep-Alive": true,
}

// newRawTarget returns the target of requests to rawURL with headers h,
// ok false when net/http would send them otherwise than rawRoundTrip does
// (not plain http, user info, a proxy, a header it writes or checks).
func newRawTarget(t *http.Transport, rawURL string, h http.Header) (rawTarget, bool) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" || u.User != nil || u.Host == "" || u.Fragment != "" {
		return rawTarget{}, false
	}
	if t.Proxy != nil {
		probe := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{}}
		if proxy, err := t.Proxy(probe); err != nil || proxy != nil {
			return rawTarget{}, false
		}
	}
	head := []byte("POST " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: Go-http-client/1.1\r\n")
	for k, vs := range h {
		if excludedHeaders[http.CanonicalHeaderKey(k)] || !validHeader(k, vs) {
			return rawTarget{}, false
		}
		for _, v := range vs {
			head = append(head, k+": "+v+"\r\n"...)
		}
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return rawTarget{addr: addr, head: head}, true
}

// validHeader reports whether net/http would send header k with values
// vs as they are (a token name; values without control characters or
// surrounding space).
func validHeader(k string, vs []string) bool {
	if k == "" || strings.ContainsFunc(k, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	}) {
		return false
	}
	for _, v := range vs {
		if v != strings.TrimSpace(v) || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return false
		}
	}
	return true
}

// rawAnswer is what rawRoundTrip received: the result of the plain
// answer (peekPlain), or the answer for the caller to read and close.
type rawAnswer struct {
	result json.RawMessage
	status int
	resp   *http.Response
}

// rawBody is the body of an answer the caller reads. Closing it never
// reads on (net/http's body would read an endless SSE stream to its end):
// the connection goes back to the pool if the body was read to its end,
// and is closed otherwise.
type rawBody struct {
	body   io.ReadCloser
	eof    atomic.Bool
	once   sync.Once
	finish func(reuse bool)
}

func (b *rawBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}

func (b *rawBody) Close() error {
	b.once.Do(func() { b.finish(b.eof.Load()) })
	return nil
}

// rawRoundTrip sends body (request id) to target on a pooled connection
// and reads the answer; ctx bounds the exchange. req is only what
// http.ReadResponse needs (the method).
func (p *rawPools) rawRoundTrip(ctx context.Context, target rawTarget, req *http.Request, body []byte, id string, max int64) (rawAnswer, error) {
	rc, err := p.get(ctx, target.addr)
	if err != nil {
		return rawAnswer{}, err
	}
	if dl, ok := ctx.Deadline(); ok {
		rc.nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { rc.nc.SetDeadline(time.Unix(1, 0)) })
	finish := func(reuse bool) {
		if stop() && reuse {
			rc.nc.SetDeadline(time.Time{})
			p.put(target.addr, rc)
			return
		}
		rc.nc.Close()
	}
	buf := make([]byte, 0, len(target.head)+len(body)+32)
	buf = append(buf, target.head...)
	buf = append(buf, "Content-Length: "...)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, "\r\n\r\n"...)
	buf = append(buf, body...)
	if _, err := rc.nc.Write(buf); err != nil {
		finish(false)
		return rawAnswer{}, ctxOr(ctx, err)
	}
	result, status, closeAfter, ok, err := peekPlain(rc.br, id, max)
	if err != nil {
		finish(false)
		return rawAnswer{}, ctxOr(ctx, err)
	}
	if ok {
		finish(!closeAfter)
		return rawAnswer{result: result, status: status}, nil
	}
	resp, err := http.ReadResponse(rc.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		// An informational answer (103 Early Hints…) precedes the answer,
		// which net/http's Transport waits for too.
		resp, err = http.ReadResponse(rc.br, req)
	}
	if err != nil {
		finish(false)
		return rawAnswer{}, ctxOr(ctx, err)
	}
	resp.Body = &rawBody{body: resp.Body, finish: func(reuse bool) { finish(reuse && !resp.Close) }}
	return rawAnswer{resp: resp}, nil
}

// ctxOr returns ctx's error if it has ended (the exchange was cut for
// it, as net/http reports), else err.
func ctxOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
