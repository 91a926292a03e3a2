// Command fixturegw is a test fixture: a vMCP gateway that behaves
// correctly but looks different from our reference, so the scenario
// catalogue can prove it judges any gateway through its target profile
// (scenarios/testdata/profiles). It runs the reference gateway (vmcp)
// in-process behind a front that changes only presentation:
//
//	--look a  toolhive-like: tools "<backend>__<tool>" (--prefix-format),
//	          health API at GET /admin/backends/health with capitalised Go
//	          field names ({"backends":{"beta":{"Status":"healthy",
//	          "CircuitState":"closed"}}}), errors worded "tool call failed
//	          on backend beta: ...", no _meta on tools or results, no
//	          error data, no session API; ready at GET /healthz.
//	--look b  mcpproxy-like: no tool prefixes (--priority), health API as
//	          a list at GET /v1/backends ([{"name":"beta","health":"up",
//	          "breaker":"CLOSED"}]), session API at GET /v1/sessions/{id}
//	          as a list (entries keep the reference's keepalive object),
//	          errors worded "server 'beta' failed: ...", and
//	          GET /ready answering before the tools are listed (MCP
//	          answers 503 for --index-delay).
//
// Broken variants: --anonymous-errors (look a: errors name no backend);
// --call-timeout 1h (look b: in effect no call deadline); --reject-feature
// F (refuses, at start, a config that turns feature F on, as toolhive
// refuses telemetry without a serviceName).
//
// Behaviours of real gateways, for fixtures c–f (quirks.go, backproxy.go):
// --no-resources (no resources capability, resources/* answered -32601);
// --drop-after-error D (after an error answer for a backend, its tools and
// prompts answer "tool 'NAME' not found", no backend named, for D);
// --accept-wrong-id (a streamable-HTTP backend's answer carrying another
// request's id is taken as the answer: a forged answer reaches the client);
// --sse-never-back (an SSE backend that ended its session stream, as a
// restart does, is never served again); --agree-old-revision (every client,
// a modern one too, is agreed the stateful 2025-06-18);
// --slow-reopen D (correct but slow: every initialize after a backend's first is
// held D on its way, as a gateway re-opening sessions on a loaded machine);
// --drop-colliding-tools (a backend's tools whose bare names, less the
// prefix, collide with an earlier backend's are left out of tools/list);
// --detach-calls (broken: a client's cancel never reaches the gateway, so
// backend calls run on after it); --slow-recovery D (a backend that
// answered 404 for a session, as a restarted one does, is refused for D);
// --http-only (a config with an SSE or stdio backend is refused at
// start); --no-prompts (no prompts capability, prompts/* answered -32601).
//
// --per-call (fixture i, percall.go): not the reference but a gateway of
// its own, as a public one is: streamable-HTTP backends only, tools only
// (resources/* and prompts/* answered -32601, neither advertised), a fresh
// backend session (initialize, tools/call, close) for every call, bounded
// by the config's timeouts (initialize, call), answers taken only with the
// request's id, initialize errors naming the backend and tools/call errors
// passed through unnamed. Look a only, without its health API.
//
// Usage: fixturegw --config FILE --listen ADDR --look a|b [flags]; FILE is
// the reference gateway's config (harness/targets/templates/chaos-vmcp.yaml.tmpl).
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fixturegw:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfgPath, listen, look, prefixFormat                         string
		priority, anonymous                                         bool
		callTimeout, indexDelay                                     time.Duration
		q                                                           quirks
		acceptWrongID, neverBack, perCallGW, initUnnamed, initRetry bool
		reject                                                      string
		slowReopen, slowRecovery                                    time.Duration
		httpOnly                                                    bool
	)
	flag.StringVar(&cfgPath, "config", "", "the reference gateway's config file")
	flag.StringVar(&listen, "listen", "127.0.0.1:0", "listen address")
	flag.StringVar(&look, "look", "a", "a (toolhive-like) or b (mcpproxy-like)")
	flag.StringVar(&prefixFormat, "prefix-format", "", "aggregation.prefixFormat, e.g. {backend}__")
	flag.BoolVar(&priority, "priority", false, "aggregation.conflictResolution priority (no tool prefixes)")
	flag.BoolVar(&anonymous, "anonymous-errors", false, "broken: error texts name no backend")
	flag.DurationVar(&callTimeout, "call-timeout", 0, "timeouts.call (broken: 1h)")
	flag.DurationVar(&indexDelay, "index-delay", time.Second, "look b: MCP answers 503 this long after start while GET /ready already answers")
	flag.BoolVar(&q.noResources, "no-resources", false, "fixture c: no resources capability; resources/* answered -32601")
	flag.DurationVar(&q.dropFor, "drop-after-error", 0, "fixture d: after an error answer for a backend, its tools and prompts are 'not found' (unnamed) for this long")
	flag.BoolVar(&acceptWrongID, "accept-wrong-id", false, "fixture e: a streamable-HTTP backend's answer with another request's id is taken as the answer")
	flag.BoolVar(&q.agreeOld, "agree-old-revision", false, "fixture g: every client is agreed protocol 2025-06-18 (server/discover answered -32601), whatever it asks for")
	flag.BoolVar(&q.keepBroken, "keep-broken-session", false, "fixture h: after an error answer for a backend in a session, the session's backend client is never rebuilt (new sessions work)")
	flag.BoolVar(&neverBack, "sse-never-back", false, "fixture f: an SSE backend whose session stream the backend ended (a restart) is never served again")
	flag.BoolVar(&q.dropColliding, "drop-colliding-tools", false, "a backend's tools whose bare names (less the --prefix-format prefix) another backend listed first are left out of tools/list")
	flag.BoolVar(&q.detach, "detach-calls", false, "broken: a client's cancel (its notifications/cancelled, or its request closing) never reaches the gateway: backend calls run on")
	flag.BoolVar(&perCallGW, "per-call", false, "fixture i: a gateway of its own: streamable-HTTP backends and tools only, a fresh backend session per call, "+
		"initialize errors name the backend, tools/call errors pass through unnamed (look a, no health API)")
	flag.BoolVar(&initUnnamed, "init-unnamed", false, "broken, with --per-call: an initialize error passes through naming no backend")
	flag.BoolVar(&initRetry, "init-retry", false, "broken, with --per-call: a call whose initialize fails retries it every 200 ms for as long as the client waits (no timeout bounds it)")
	flag.DurationVar(&slowReopen, "slow-reopen", 0, "correct but slow: every initialize of a backend session after a backend's first is held this long "+
		"on its way to the backend (a gateway re-opening a broken backend session on a loaded machine)")
	flag.DurationVar(&slowRecovery, "slow-recovery", 0, "slow to recover: once a backend answers 404 for a session (it restarted), it is refused for this long "+
		"(its tools fail meanwhile), as a gateway that rebuilds a backend's client only after a pause")
	flag.BoolVar(&httpOnly, "http-only", false, "refuse, at start, a config with a backend on any transport but streamable-http")
	flag.BoolVar(&q.noPrompts, "no-prompts", false, "no prompts capability; prompts/* answered -32601")
	flag.StringVar(&reject, "reject-feature", "", "refuse to start when the config turns this feature on (health, breaker, keepalive, metrics or optimizer), "+
		"as a gateway that does not support it, or needs more settings for it, does")
	flag.Parse()
	if (initUnnamed || initRetry) && !perCallGW {
		return fmt.Errorf("--init-unnamed and --init-retry need --per-call")
	}
	if look != "a" && look != "b" {
		return fmt.Errorf("--look %q: want a or b", look)
	}
	cfg, err := vmcp.LoadConfig(cfgPath)
	if err != nil {
		return err
	}
	if err := rejectFeature(cfg, cfgPath, reject); err != nil {
		return err
	}
	for _, b := range cfg.Backends {
		if httpOnly && b.Transport != config.TransportStreamableHTTP {
			return fmt.Errorf("config %s: backend %s: transport %q is not supported (streamable-http only)", cfgPath, b.Name, b.Transport)
		}
	}
	if prefixFormat != "" {
		cfg.Aggregation.ConflictResolution, cfg.Aggregation.PrefixFormat = config.ConflictPrefix, prefixFormat
	}
	if priority {
		cfg.Aggregation.ConflictResolution = config.ConflictPriority
	}
	if callTimeout > 0 {
		cfg.Timeouts.Call = callTimeout
	}
	if acceptWrongID || neverBack || slowReopen > 0 || slowRecovery > 0 {
		proxies, err := startBackProxies(cfg, backProxyOptions{acceptWrongID: acceptWrongID, neverBack: neverBack, slowReopen: slowReopen, slowRecovery: slowRecovery})
		defer func() {
			for _, p := range proxies {
				_ = p.Close()
			}
		}()
		if err != nil {
			return err
		}
	}
	for _, b := range cfg.Backends {
		q.backends = append(q.backends, b.Name)
	}
	q.prefixFormat = prefixFormat
	f := &front{look: look, anonymous: anonymous, q: &q}
	if perCallGW {
		if look != "a" {
			return fmt.Errorf("--per-call: look a only")
		}
		q.noResources, q.noPrompts = true, true
		pc, err := newPerCall(context.Background(), cfg, cmp.Or(prefixFormat, "{backend}_"), initUnnamed, initRetry)
		if err != nil {
			return err
		}
		f.mcp = pc
	} else {
		g, err := vmcp.New(cfg, vmcp.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		if err != nil {
			return err
		}
		f.g, f.mcp = g, g
	}
	if look == "b" {
		time.AfterFunc(indexDelay, func() { f.indexed.Store(true) })
	} else {
		f.indexed.Store(true)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: f.routes(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)).Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("{\"look\":%q,\"addr\":%q}\n", look, ln.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if f.g != nil {
		_ = f.g.Shutdown(sctx)
	}
	return srv.Shutdown(sctx)
}

// front serves the gateway's MCP endpoint through a rewriter and its admin
// APIs in the look's shape.
type front struct {
	g         *vmcp.Gateway // the reference (nil for --per-call: no admin APIs)
	mcp       http.Handler  // the MCP endpoint: g, or fixture i's own gateway
	look      string
	anonymous bool
	indexed   atomic.Bool
	q         *quirks
}

func (f *front) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", f.serveMCP)
	if f.look == "a" {
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]string{"status": "ok"}) })
	}
	if f.g == nil {
		return mux
	}
	mux.HandleFunc("GET /metrics", f.g.ServeHTTP)
	if f.look == "a" {
		mux.HandleFunc("GET /admin/backends/health", f.healthA)
		return mux
	}
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, map[string]bool{"ready": true}) })
	mux.HandleFunc("GET /v1/backends", f.healthB)
	mux.HandleFunc("GET /v1/sessions/{id}", f.sessionB)
	return mux
}

func (f *front) serveMCP(w http.ResponseWriter, r *http.Request) {
	if !f.indexed.Load() {
		http.Error(w, "indexing upstream servers", http.StatusServiceUnavailable)
		return
	}
	req := f.q.readRequest(r)
	if f.q.answer(w, req) {
		return
	}
	if f.q.detach {
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	seen := &errorSeen{fn: f.rewriteMessage}
	rw := newRewriter(w, seen.rewrite)
	f.mcp.ServeHTTP(rw, r)
	rw.finish()
	f.q.answered(req, seen.seen.Load())
}

// healthA is the toolhive-like health API: capitalised Go field names.
func (f *front) healthA(w http.ResponseWriter, _ *http.Request) {
	rep := f.g.Health()
	out := map[string]any{}
	for name, b := range rep.Backends {
		out[name] = map[string]any{"Status": string(b.Status), "ConsecutiveFailures": b.ConsecutiveFailures,
			"CircuitState": string(b.CircuitState), "LastError": b.LastError}
	}
	writeJSON(w, map[string]any{"monitoring_enabled": rep.Summary.HealthMonitoring, "backends": out})
}

// bHealth and bCircuit are look b's words for our states.
var (
	bHealth  = map[string]string{"healthy": "up", "unhealthy": "down", "degraded": "slow", "unknown": "pending", "unauthenticated": "denied"}
	bCircuit = map[string]string{"closed": "CLOSED", "open": "OPEN", "half-open": "HALF_OPEN"}
)

// healthB is the mcpproxy-like health API: a list, its own words.
func (f *front) healthB(w http.ResponseWriter, _ *http.Request) {
	rep := f.g.Health()
	list := []map[string]any{}
	for _, b := range f.g.Config().Backends {
		h := rep.Backends[b.Name]
		list = append(list, map[string]any{"name": b.Name, "health": bHealth[string(h.Status)], "breaker": bCircuit[string(h.CircuitState)], "error": h.LastError,
			"keepalive": h.Keepalive}) // the reference's keepalive object, which the keepalive scenario reads
	}
	writeJSON(w, map[string]any{"servers": list})
}

// sessionB is look b's session API: the session's backends as a list.
func (f *front) sessionB(w http.ResponseWriter, r *http.Request) {
	s, ok := f.g.Session(r.PathValue("id"))
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"unknown session"}`))
		return
	}
	st := s.Status()
	list := []map[string]any{}
	for _, name := range st.BackendOrder {
		m := st.Backends[name]
		list = append(list, map[string]any{"server": name, "status": string(m.State), "error": m.LastError})
	}
	writeJSON(w, map[string]any{"session": map[string]any{"id": st.ID, "upstreams": list}})
}

// rejectFeature is the error a gateway gives for a config that turns on
// the feature it rejects (none when reject is "" or the feature is off).
func rejectFeature(cfg *vmcp.Config, path, reject string) error {
	on := map[string]bool{
		"health": cfg.Health.Enabled, "breaker": cfg.Breaker.Enabled, "metrics": cfg.Metrics.Prometheus, "optimizer": cfg.Optimizer.Enabled,
	}
	for _, b := range cfg.Backends {
		on["keepalive"] = on["keepalive"] || b.Keepalive.Method != "" && b.Keepalive.Method != "none"
	}
	switch {
	case reject == "":
		return nil
	case !slices.Contains([]string{"health", "breaker", "keepalive", "metrics", "optimizer"}, reject):
		return fmt.Errorf("--reject-feature %q: want health, breaker, keepalive, metrics or optimizer", reject)
	case on[reject]:
		return fmt.Errorf("config %s: %s: service name cannot be empty (this gateway needs settings for %s that the config does not give)", path, reject, reject)
	}
	return nil
}
