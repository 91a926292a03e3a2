package scenarios_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// proxyRewrites say how a test gateway proxy rewrites the JSON-RPC
// messages passing through it (nil: unchanged).
type proxyRewrites struct {
	// request rewrites a POSTed message; it may change the request's
	// headers.
	request func(req *http.Request, msg []byte) []byte
	// response rewrites each JSON-RPC message of a POST's answer (plain
	// JSON or each SSE data line).
	response func(msg []byte) []byte
}

// startProxy puts a rewriting reverse proxy in front of gw. Closing the
// proxy gateway closes gw too.
func startProxy(ctx context.Context, gw targets.Gateway, rw proxyRewrites) (targets.Gateway, error) {
	u, err := url.Parse(gw.BaseURL())
	if err != nil {
		_ = gw.Close(ctx)
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = gw.Close(ctx)
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0) // a cancelled call's "context canceled"
	if rw.response != nil {
		rp.ModifyResponse = func(resp *http.Response) error {
			if resp.Request.Method != http.MethodPost {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				lines := strings.Split(string(body), "\n")
				for i, l := range lines {
					if data, ok := strings.CutPrefix(l, "data: "); ok {
						lines[i] = "data: " + string(rw.response([]byte(data)))
					}
				}
				body = []byte(strings.Join(lines, "\n"))
			} else {
				body = rw.response(body)
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			resp.ContentLength = int64(len(body))
			resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
			return nil
		}
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && rw.request != nil {
			body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
			req.Body.Close()
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = rw.request(req, body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
			req.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		rp.ServeHTTP(w, req)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &proxyGateway{inner: gw, srv: srv, base: "http://" + ln.Addr().String()}, nil
}

type proxyGateway struct {
	inner targets.Gateway
	srv   *http.Server
	base  string
}

func (p *proxyGateway) MCPURL() string  { return p.base + "/mcp" }
func (p *proxyGateway) BaseURL() string { return p.base }
func (p *proxyGateway) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = p.srv.Close()
	}
	return errors.Join(err, p.inner.Close(ctx))
}
