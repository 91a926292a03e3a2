package fakebackends

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// adminOps are what the control API does beyond the faults and the
// request log; HTTP and stdio backends share the API.
type adminOps struct {
	restart func(context.Context) error // nil: not supported
	stop    func()                      // nil: not supported
	expire  func() int
	info    func() map[string]any
}

// serveAdmin serves the control API on the script's admin address (a
// non-loopback address needs an admin token) until srv is closed; inflight
// counts its serving loop and its handlers.
func (c *core) serveAdmin(ctx context.Context, inflight *sync.WaitGroup, ops adminOps) (url string, srv *http.Server, err error) {
	host, _, err := net.SplitHostPort(c.script.Admin)
	if err != nil {
		return "", nil, fmt.Errorf("fakebackends: %s: %w: admin address %q: %w", c.script.Name, ErrAddress, c.script.Admin, err)
	}
	if !control.IsLoopback(host) && c.opts.adminToken == "" {
		return "", nil, fmt.Errorf("fakebackends: %s: %w: control API on non-loopback address %q needs an admin token (--admin-token-file FILE or $CHAOS_ADMIN_TOKEN)", c.script.Name, ErrAddress, c.script.Admin)
	}
	ln, err := listen(ctx, c.script.Admin)
	if err != nil {
		return "", nil, fmt.Errorf("fakebackends: %s: %w: admin listen %s: %w", c.script.Name, ErrAddress, c.script.Admin, err)
	}
	srv = &http.Server{Handler: c.newAdminMux(inflight, ops), ReadHeaderTimeout: 10 * time.Second}
	inflight.Go(func() { _ = srv.Serve(ln) })
	return "http://" + ln.Addr().String(), srv, nil
}

// newAdminMux is the control API:
//
//	GET /faults            the faults in force and the lease
//	PUT /faults?ttl=D      replace them (YAML or JSON, list or {faults: [...]});
//	                       they are held by a lease of D (default 30s)
//	POST /faults?ttl=D     add to them; the lease is renewed for D
//	DELETE /faults         clear them; the lease ends
//	GET /lease             the lease
//	POST /lease?ttl=D      renew it (409 when no faults are held)
//	POST /restart          restart (forgets every session; serves again after a stop)
//	POST /stop             stop serving MCP (connection refused) until restart
//	POST /expire-sessions  forget every session now
//	GET /requests          the request log
//	GET /healthz           200 while the control API runs
func (c *core) newAdminMux(inflight *sync.WaitGroup, ops adminOps) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { control.WriteJSON(w, http.StatusOK, ops.info()) })
	control.HandleFaults(mux, control.Faults{
		List: func() map[string]any {
			return map[string]any{"faults": c.engine.List(), "lease": c.leased.lease.Status()}
		},
		Change:   c.leasedChange,
		Clear:    c.leasedClear,
		Requests: func() any { return c.log.Snapshot() },
	})
	control.HandleLease(mux, c.leased.lease, c.leased.max)
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		if ops.restart == nil {
			control.WriteError(w, http.StatusNotImplemented, fmt.Errorf("restart is not supported on this transport"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := ops.restart(ctx); err != nil {
			control.WriteError(w, http.StatusInternalServerError, err)
			return
		}
		control.WriteJSON(w, http.StatusOK, map[string]any{"restarted": true})
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		if ops.stop == nil {
			control.WriteError(w, http.StatusNotImplemented, fmt.Errorf("stop is not supported on this transport"))
			return
		}
		ops.stop()
		control.WriteJSON(w, http.StatusOK, map[string]any{"stopped": true})
	})
	mux.HandleFunc("POST /expire-sessions", func(w http.ResponseWriter, r *http.Request) {
		control.WriteJSON(w, http.StatusOK, map[string]any{"expired": ops.expire()})
	})
	gated := control.RequireToken(c.opts.adminToken, "fakebackend-admin", mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Done()
		gated.ServeHTTP(w, r)
	})
}
