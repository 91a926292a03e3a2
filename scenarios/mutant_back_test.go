package scenarios_test

// The proxy between a mutant gateway and beta (mutantTarget.back): it sees
// what beta answers the gateway, and may change it.

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// backPolicy is how a mutant's proxy between the gateway and beta
// misbehaves.
type backPolicy interface {
	// backAnswer is told beta's HTTP status for a POST of method in the
	// backend session and returns the status the gateway gets instead
	// (status: unchanged).
	backAnswer(session, method string, status int) int
	// streamEnded is told that a GET stream from beta ended (beta
	// restarted or ended its sessions, or the gateway closed it); the
	// gateway sees the end that much later.
	streamEnded() (hold time.Duration)
	// connectionLost is told that beta closed a connection of the proxy's
	// (it restarted, or closed an idle one).
	connectionLost()
}

// watchedConn tells lost once, when a read from beta fails (beta closed
// the connection, or the proxy did).
type watchedConn struct {
	net.Conn
	once sync.Once
	lost func()
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		c.once.Do(c.lost)
	}
	return n, err
}

// startBackProxy starts a proxy to the backend at target with pol; the
// gateway is to reach the backend at the returned URL.
func startBackProxy(target string, pol backPolicy) (*http.Server, string, error) {
	u, err := url.Parse(target)
	if err != nil || target == "" {
		return nil, "", errors.Join(errors.New("backend-side proxy: no beta URL "+strconv.Quote(target)), err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	var closing atomic.Bool // the proxy's own closes tell nothing
	transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: conn, lost: func() {
			if !closing.Load() {
				pol.connectionLost()
			}
		}}, nil
	}
	rp.Transport = transport
	rp.ModifyResponse = func(resp *http.Response) error {
		if method := resp.Request.Header.Get(backMethodHeader); method != "" {
			resp.StatusCode = pol.backAnswer(resp.Request.Header.Get("Mcp-Session-Id")+resp.Request.URL.Query().Get("sessionId"), method, resp.StatusCode)
		}
		return nil
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(backMethodHeader)
		if r.Method == http.MethodPost {
			m, ok := readRPC(w, r)
			if !ok {
				return
			}
			if m.Method != "" {
				r.Header.Set(backMethodHeader, m.Method)
			}
		}
		rp.ServeHTTP(w, r)
		if r.Method != http.MethodGet {
			return
		}
		if hold := pol.streamEnded(); hold > 0 {
			t := time.NewTimer(hold)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
			}
		}
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(func() { closing.Store(true); transport.CloseIdleConnections() })
	go func() { _ = srv.Serve(ln) }()
	proxied := *u
	proxied.Host = ln.Addr().String()
	return srv, proxied.String(), nil
}

// backMethodHeader carries a POST's JSON-RPC method from the backend-side
// proxy's handler to its ModifyResponse (the request is the same).
const backMethodHeader = "X-Mutant-Method"
