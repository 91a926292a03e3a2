package fakebackends

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// maxAdminBody bounds a control API request body.
const maxAdminBody = 1 << 20

// startAdmin starts the control API on the script's admin address.
func (b *Backend) startAdmin(ctx context.Context) error {
	host, _, err := net.SplitHostPort(b.script.Admin)
	if err != nil {
		return fmt.Errorf("fakebackends: %s: admin address %q: %w", b.script.Name, b.script.Admin, err)
	}
	if !isLoopback(host) && b.opts.adminToken == "" {
		return fmt.Errorf("fakebackends: %s: control API on non-loopback address %q needs an admin token (--admin-token)", b.script.Name, b.script.Admin)
	}
	ln, err := listen(ctx, b.script.Admin)
	if err != nil {
		return fmt.Errorf("fakebackends: %s: admin listen %s: %w", b.script.Name, b.script.Admin, err)
	}
	b.adminURL = "http://" + ln.Addr().String()
	b.admin = &http.Server{Handler: b.adminHandler(), ReadHeaderTimeout: 10 * time.Second}
	b.loops.Add(1)
	go func() {
		defer b.loops.Done()
		_ = b.admin.Serve(ln)
	}()
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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
	return newAdminMux(b.opts.adminToken, &b.inflight, adminOps{
		faults:   b.Faults,
		set:      b.SetFaults,
		add:      b.AddFaults,
		clear:    b.ClearFaults,
		restart:  b.Restart,
		stop:     b.Stop,
		expire:   b.ExpireSessions,
		requests: b.Requests,
		info: func() map[string]any {
			return map[string]any{"name": b.script.Name, "url": b.URL(), "transport": b.script.Transport, "protocol": b.script.Protocol}
		},
	})
}

// adminOps are what the control API acts on; HTTP and stdio backends share
// the API.
type adminOps struct {
	faults   func() []Fault
	set      func(...Fault) error
	add      func(...Fault) error
	clear    func()
	restart  func(context.Context) error // nil: not supported
	stop     func()                      // nil: not supported
	expire   func() int
	requests func() []RequestRecord
	info     func() map[string]any
}

type waitGroup interface {
	Add(int)
	Done()
}

func newAdminMux(token string, inflight waitGroup, ops adminOps) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, ops.info()) })
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"faults": ops.faults()})
	})
	change := func(apply func(...Fault) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			data, err := io.ReadAll(io.LimitReader(r.Body, maxAdminBody))
			if err != nil {
				writeError(w, http.StatusBadRequest, err)
				return
			}
			faults, err := ParseFaults(data, r.Method+" /faults")
			if err == nil {
				err = apply(faults...)
			}
			if err != nil {
				writeError(w, http.StatusBadRequest, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"faults": ops.faults()})
		}
	}
	mux.HandleFunc("PUT /faults", change(ops.set))
	mux.HandleFunc("POST /faults", change(ops.add))
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) {
		ops.clear()
		writeJSON(w, http.StatusOK, map[string]any{"faults": []Fault{}})
	})
	mux.HandleFunc("POST /restart", func(w http.ResponseWriter, r *http.Request) {
		if ops.restart == nil {
			writeError(w, http.StatusNotImplemented, fmt.Errorf("restart is not supported on this transport"))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := ops.restart(ctx); err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"restarted": true})
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		if ops.stop == nil {
			writeError(w, http.StatusNotImplemented, fmt.Errorf("stop is not supported on this transport"))
			return
		}
		ops.stop()
		writeJSON(w, http.StatusOK, map[string]any{"stopped": true})
	})
	mux.HandleFunc("POST /expire-sessions", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"expired": ops.expire()})
	})
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"requests": ops.requests()})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Done()
		if token != "" {
			got := r.Header.Get("Authorization")
			if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="fakebackend-admin"`)
				writeError(w, http.StatusUnauthorized, fmt.Errorf("missing or wrong bearer token"))
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
