package fakebackends

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// startAdmin starts the control API on the script's admin address.
func (b *Backend) startAdmin(ctx context.Context) error {
	ln, err := b.listenAdmin(ctx)
	if err != nil {
		return err
	}
	b.adminURL = "http://" + ln.Addr().String()
	b.admin = &http.Server{Handler: b.adminHandler(), ReadHeaderTimeout: 10 * time.Second}
	b.loops.Go(func() { _ = b.admin.Serve(ln) })
	return nil
}

// adminHandler is the control API:
//
//	GET /faults            the faults in force
//	PUT /faults            replace them (YAML or JSON, list or {faults: [...]})
//	POST /faults           add to them
//	DELETE /faults         clear them
//	POST /restart          restart (forgets every session; serves again after a stop)
//	POST /stop             stop serving MCP (connection refused) until restart
//	POST /expire-sessions  forget every session now
//	GET /requests          the request log
//	GET /healthz           200 while the control API runs
func (b *Backend) adminHandler() http.Handler {
	return b.newAdminMux(&b.inflight, adminOps{
		restart: b.Restart,
		stop:    b.Stop,
		expire:  b.ExpireSessions,
		info: func() map[string]any {
			return map[string]any{"name": b.script.Name, "url": b.URL(), "transport": b.script.Transport, "protocol": b.script.Protocol}
		},
	})
}

// adminOps are what the control API does beyond the faults and the
// request log; HTTP and stdio backends share the API.
type adminOps struct {
	restart func(context.Context) error // nil: not supported
	stop    func()                      // nil: not supported
	expire  func() int
	info    func() map[string]any
}

func (c *core) newAdminMux(inflight *sync.WaitGroup, ops adminOps) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { control.WriteJSON(w, http.StatusOK, ops.info()) })
	control.HandleFaults(mux, control.Faults{
		List: func() map[string]any { return map[string]any{"faults": c.engine.List()} },
		Change: func(r *http.Request, body []byte, add bool) (map[string]any, error) {
			faults, err := ParseFaults(body, r.Method+" /faults")
			if err == nil {
				err = c.changeFaults(add, faults...)
			}
			return map[string]any{"faults": c.engine.List()}, err
		},
		Clear:    func() map[string]any { _ = c.changeFaults(false); return map[string]any{"faults": []Fault{}} },
		Requests: func() any { return c.log.Snapshot() },
	})
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
