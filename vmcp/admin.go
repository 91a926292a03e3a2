package vmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/access"
)

// maxRequestBytes caps a client's JSON-RPC request body.
const maxRequestBytes = 8 << 20

func (g *Gateway) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", access.RequireToken(g.cfg.IncomingAuth, http.HandlerFunc(g.serveMCP)))
	admin := func(pattern string, h http.HandlerFunc) {
		mux.Handle(pattern, access.RequireAdmin(g.cfg.IncomingAuth, h))
	}
	// okJSON serves what v returns as JSON.
	okJSON := func(v func() any) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, v()) }
	}
	admin("GET /status", okJSON(func() any { return g.Status() }))
	admin("GET /api/sessions/{id}", g.serveSession)
	admin("GET /api/sessions", okJSON(func() any { return map[string]any{"sessions": g.Sessions()} }))
	admin("GET /api/backends/health", okJSON(func() any { return g.Health() }))
	admin("GET /metrics", g.serveMetrics)
	return mux
}

// serveMCP hands the request to mcp-go. resources/read and prompts/get
// responses are buffered so a backend failure's data {backend, kind} can
// be added to the JSON-RPC error.
func (g *Gateway) serveMCP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		g.streamable.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil {
		http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(body) > maxRequestBytes {
		http.Error(w, "request too large", http.StatusRequestEntityTooLarge)
		return
	}
	var msg rpcRequest
	decodeErr := decodeRequest(body, &msg)
	if decodeErr == nil && msg.sessionfulInitialize() {
		release, ok := g.reserveSessionSlot()
		if !ok {
			g.refuseSessionLimit(w)
			return
		}
		defer release()
	}
	if msg.Method == string(mcp.MethodNotificationCancelled) {
		g.cancelPassing(r, &msg)
	}
	if decodeErr == nil && (g.passThrough(w, r, &msg) || g.passThroughModern(w, r, &msg)) {
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body)) // mcp-go reads it again
	if msg.Method != "resources/read" && msg.Method != "prompts/get" {
		g.streamable.ServeHTTP(w, r)
		return
	}
	h := &atomic.Pointer[BackendError]{}
	r = r.WithContext(context.WithValue(r.Context(), holderKey{}, h))
	bw := &bufferedWriter{header: http.Header{}}
	g.streamable.ServeHTTP(bw, r)
	bw.flushTo(w, h.Load())
}

// redactURL hides the user information (user:password@) of a backend URL
// shown by the admin endpoints (redact.Text, the CLI's one redaction).
func redactURL(raw string) string { return redact.Text(raw) }

// Status is the JSON of GET /status.
type Status struct {
	Name      string          `json:"name"`
	Version   string          `json:"version"`
	StartedAt time.Time       `json:"startedAt"`
	Uptime    string          `json:"uptime"`
	Backends  []BackendInfo   `json:"backends"`
	Sessions  []SessionStatus `json:"sessions"`
	Counts    StatusCounts    `json:"counts"`
	Pool      PoolStatus      `json:"pool"`
}

// BackendInfo describes a configured backend and its states across
// sessions.
type BackendInfo struct {
	Name      string               `json:"name"`
	Transport string               `json:"transport"`
	URL       string               `json:"url,omitempty"`
	Command   []string             `json:"command,omitempty"`
	States    map[BackendState]int `json:"states"`
	// Health is the same entry GET /api/backends/health shows.
	Health BackendHealth `json:"health"`
}

// StatusCounts summarises the gateway.
type StatusCounts struct {
	Sessions int                  `json:"sessions"`
	Backends int                  `json:"backends"`
	States   map[BackendState]int `json:"states"`
}

// Status returns the gateway status served at GET /status.
func (g *Gateway) Status() Status {
	g.mu.Lock()
	sessions := make([]*Session, 0, len(g.sessions))
	for _, id := range slices.Sorted(maps.Keys(g.sessions)) {
		sessions = append(sessions, g.sessions[id])
	}
	g.mu.Unlock()
	st := Status{
		Name:      g.cfg.Name,
		Version:   Version,
		StartedAt: g.started,
		Uptime:    time.Since(g.started).Round(time.Millisecond).String(),
		Sessions:  []SessionStatus{},
		Counts:    StatusCounts{Sessions: len(sessions), Backends: len(g.cfg.Backends), States: map[BackendState]int{}},
		Pool:      g.pool.status(),
	}
	idx := map[string]int{}
	healthRep := g.Health()
	for i, b := range g.cfg.Backends {
		idx[b.Name] = i
		st.Backends = append(st.Backends, BackendInfo{Name: b.Name, Transport: string(b.Transport), URL: redactURL(b.URL), Command: b.Command,
			States: map[BackendState]int{}, Health: healthRep.Backends[b.Name]})
	}
	count := func(name string, state BackendState) {
		if i, ok := idx[name]; ok {
			st.Backends[i].States[state]++
		}
		st.Counts.States[state]++
	}
	for _, s := range sessions {
		ss := s.Status()
		st.Sessions = append(st.Sessions, ss)
		for name, ms := range ss.Backends {
			count(name, ms.State)
		}
	}
	for name, slots := range st.Pool.Backends {
		for _, ms := range slots {
			count(name, ms.State)
		}
	}
	return st
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (g *Gateway) serveSession(w http.ResponseWriter, r *http.Request) {
	s := g.session(r.PathValue("id"))
	if s == nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such session"})
		return
	}
	writeJSON(w, http.StatusOK, s.Status())
}
