package proxy

import (
	"cmp"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// checkAdminAddr refuses a non-loopback control address without a token
// (the fake backends' rule).
func checkAdminAddr(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("proxy: --admin %q: %w", addr, err)
	}
	if !control.IsLoopback(host) && token == "" {
		return fmt.Errorf("proxy: control API on non-loopback address %q needs an admin token (--admin-token-file FILE or $CHAOS_ADMIN_TOKEN)", addr)
	}
	return nil
}

// AdminHandler is the control API. Its fault routes are the fake
// backends' (same bodies, same answers), plus the lease:
//
//	GET /faults         the faults in force and the lease
//	PUT /faults?ttl=D   replace them; the lease runs D (default the proxy's)
//	POST /faults?ttl=D  add to them; the lease is renewed for D
//	DELETE /faults      clear them; the lease ends
//	GET /requests       the request log (the last 10,000 proxied requests)
//	GET /lease          the lease
//	POST /lease?ttl=D   renew the lease (409 when no faults are held)
//	GET /healthz        {upstream, url, faults, lease}
func (p *Proxy) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		control.WriteJSON(w, http.StatusOK, map[string]any{"kind": "proxy", "upstream": p.upstream.String(), "url": p.mcpURL,
			"faults": p.engine.Len(), "lease": p.lease.Status()})
	})
	control.HandleFaults(mux, control.Faults{
		List: func() map[string]any { return map[string]any{"faults": p.engine.List(), "lease": p.lease.Status()} },
		Change: func(r *http.Request, body []byte, add bool) (map[string]any, error) {
			ttl, err := p.ttlParam(r)
			if err != nil {
				return nil, err
			}
			st, err := p.setFaults(body, r.Method+" /faults", add, ttl)
			return map[string]any{"faults": p.engine.List(), "lease": st}, err
		},
		Clear: func() map[string]any {
			p.ClearFaults()
			return map[string]any{"faults": []any{}, "lease": p.lease.Status()}
		},
		Requests: func() any { return p.Requests() },
	})
	control.HandleLease(mux, p.lease, p.opts.MaxLeaseTTL)
	for _, route := range []string{"POST /restart", "POST /stop", "POST /expire-sessions"} {
		mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
			control.WriteError(w, http.StatusNotImplemented, fmt.Errorf("%s is not supported by a proxy: it does not own the backend", route))
		})
	}
	return control.RequireToken(p.opts.AdminToken, "chaos-proxy-admin", mux)
}

// ttlParam reads the ttl query parameter (default the proxy's lease TTL).
func (p *Proxy) ttlParam(r *http.Request) (time.Duration, error) {
	return control.ParseTTL(r, p.opts.LeaseTTL, p.opts.MaxLeaseTTL)
}

// SetFaults replaces (add false) or extends (add true) the faults from a
// control API body, and holds the lease for ttl. An empty result clears
// the lease.
func (p *Proxy) setFaults(body []byte, source string, add bool, ttl time.Duration) (LeaseStatus, error) {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	var err error
	if add {
		err = p.engine.Add(body, source)
	} else {
		err = p.engine.Set(body, source)
	}
	if err != nil {
		return p.lease.Status(), err
	}
	if p.engine.Len() == 0 {
		p.lease.Stop()
		return p.lease.Status(), nil
	}
	return p.lease.Hold(ttl), nil
}

// SetFaults replaces the faults with those of a control API body (YAML or
// JSON, as PUT /faults) under a lease of ttl (0: the default).
func (p *Proxy) SetFaults(body []byte, ttl time.Duration) error {
	ttl = cmp.Or(ttl, p.opts.LeaseTTL)
	_, err := p.setFaults(body, "SetFaults", false, ttl)
	return err
}

// ClearFaults clears the faults and ends the lease.
func (p *Proxy) ClearFaults() {
	p.ctl.Lock()
	defer p.ctl.Unlock()
	p.engine.Clear()
	p.lease.Stop()
}

// Lease returns the lease's status.
func (p *Proxy) Lease() LeaseStatus { return p.lease.Status() }
