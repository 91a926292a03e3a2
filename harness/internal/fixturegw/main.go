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
// start).
//
// For fixtures j–n (false verdicts of issue 40): --no-prompts (no prompts
// capability, prompts/* answered -32601; with --no-resources, tools only);
// --rpc-error-code N (rpcerror.go: every failure the reference reports
// for a backend on tools/call is answered HTTP 200, a JSON-RPC error to
// the request's id with code N, "backend beta: tool call failed: CAUSE",
// a reset or closed connection quoted as "read tcp ...: connection reset
// by peer"); --no-resume (backproxy.go: the backend client never resumes
// a response stream: a GET with Last-Event-ID is answered 405 on its way
// to the backend); --cancel-one-in N (cancelonein.go: only the 1st of
// every N client cancellations, a notifications/cancelled or an abandoned
// request, is acted on; the others are swallowed as --detach-calls does);
// --sse-never-back-silent (fixture o, with --call-timeout 1h: as
// --sse-never-back, but the SSE backend's later requests are held
// unanswered, so every call of it waits for as long as its client does).
//
// Issue 41's: --health-always-healthy (fixture r: the health API reports
// every backend healthy, its circuit closed, whatever the gateway knows);
// --refuse-revision V (fixture s, revisions.go, repeatable: every request
// on protocol revision V is answered -32022 "Unsupported protocol
// version", while server/discover still lists V); --discover-first
// (fixture q, with --per-call: each backend session opens with
// server/discover, a 2026-07-28 backend client, instead of initialize).
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
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
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
		var usage usageError
		switch {
		case errors.Is(err, flag.ErrHelp):
			os.Exit(0)
		case errors.As(err, &usage):
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run() error {
	fx, err := newFixture(os.Args[1:])
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", fx.listen)
	if err != nil {
		fx.close(context.Background())
		return err
	}
	srv := &http.Server{Handler: fx.f.routes(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)).Handler(), slog.LevelDebug)}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("{\"look\":%q,\"addr\":%q}\n", fx.f.look, ln.Addr().String())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fx.close(sctx)
	return srv.Shutdown(sctx)
}

// usageError is a command line the flags refuse (exit status 2).
type usageError struct{ error }

// fixture is a built fixture gateway: its front (serve f.routes()), the
// address it is to listen on, and the back proxies it owns.
type fixture struct {
	f       *front
	listen  string
	proxies []*http.Server
}

// close shuts the reference gateway down and closes the back proxies.
func (fx *fixture) close(ctx context.Context) {
	if fx.f != nil && fx.f.g != nil {
		_ = fx.f.g.Shutdown(ctx)
	}
	for _, p := range fx.proxies {
		_ = p.Close()
	}
}

// newFixture builds the fixture gateway the command line args (without
// the program name) ask for.
func newFixture(args []string) (fx *fixture, err error) {
	var (
		cfgPath, look, prefixFormat                                 string
		priority, anonymous                                         bool
		callTimeout, indexDelay                                     time.Duration
		q                                                           quirks
		acceptWrongID, neverBack, perCallGW, initUnnamed, initRetry bool
		noResume, deadSilent                                        bool
		reject                                                      string
		healthLies                                                  bool
		slowReopen, slowRecovery                                    time.Duration
		rpcErrorCode                                                rpcCodeFlag
		httpOnly, discoverFirst, slowRecoveryDial                   bool
	)
	fx = &fixture{}
	fs := flag.NewFlagSet("fixturegw", flag.ContinueOnError)
	fs.StringVar(&cfgPath, "config", "", "the reference gateway's config file")
	fs.StringVar(&fx.listen, "listen", "127.0.0.1:0", "listen address")
	fs.StringVar(&look, "look", "a", "a (toolhive-like) or b (mcpproxy-like)")
	fs.StringVar(&prefixFormat, "prefix-format", "", "aggregation.prefixFormat, e.g. {backend}__")
	fs.BoolVar(&priority, "priority", false, "aggregation.conflictResolution priority (no tool prefixes)")
	fs.BoolVar(&anonymous, "anonymous-errors", false, "broken: error texts name no backend")
	fs.DurationVar(&callTimeout, "call-timeout", 0, "timeouts.call (broken: 1h)")
	fs.DurationVar(&indexDelay, "index-delay", time.Second, "look b: MCP answers 503 this long after start while GET /ready already answers")
	fs.BoolVar(&q.noResources, "no-resources", false, "fixture c: no resources capability; resources/* answered -32601")
	fs.DurationVar(&q.dropFor, "drop-after-error", 0, "fixture d: after an error answer for a backend, its tools and prompts are 'not found' (unnamed) for this long")
	fs.BoolVar(&acceptWrongID, "accept-wrong-id", false, "fixture e: a streamable-HTTP backend's answer with another request's id is taken as the answer")
	fs.BoolVar(&q.agreeOld, "agree-old-revision", false, "fixture g: every client is agreed protocol 2025-06-18 (server/discover answered -32601), whatever it asks for")
	fs.BoolVar(&q.keepBroken, "keep-broken-session", false, "fixture h: after an error answer for a backend in a session, the session's backend client is never rebuilt (new sessions work)")
	fs.BoolVar(&neverBack, "sse-never-back", false, "fixture f: an SSE backend whose session stream the backend ended (a restart) is never served again")
	fs.BoolVar(&deadSilent, "sse-never-back-silent", false, "fixture o: as --sse-never-back, but the SSE backend's requests are held unanswered, not cut "+
		"(with --call-timeout 1h every later call of it waits until the client gives up)")
	fs.BoolVar(&q.dropColliding, "drop-colliding-tools", false, "a backend's tools whose bare names (less the --prefix-format prefix) another backend listed first are left out of tools/list")
	fs.BoolVar(&q.detach, "detach-calls", false, "broken: a client's cancel (its notifications/cancelled, or its request closing) never reaches the gateway: backend calls run on")
	fs.BoolVar(&q.noPrompts, "no-prompts", false, "fixture j: no prompts capability; prompts/* answered -32601")
	fs.Var(&rpcErrorCode, "rpc-error-code", "fixture k: every error the gateway reports for a backend on tools/call is answered as a JSON-RPC error with this code "+
		"(e.g. 0 or -32005), its message \"backend NAME: tool call failed: CAUSE\" (a reset or closed connection quoted as \"... connection reset by peer\")")
	fs.BoolVar(&noResume, "no-resume", false, "fixture m: the backend client never resumes an SSE response stream: a GET with Last-Event-ID "+
		"is answered 405 on its way to the backend, never reaching it, and the call fails")
	fs.IntVar(&q.cancelOneIn, "cancel-one-in", 0, "fixture n: of the client's cancellations (a notifications/cancelled, or a request it abandons), only the 1st of every N "+
		"is acted on; the others are swallowed as --detach-calls does")
	fs.BoolVar(&perCallGW, "per-call", false, "fixture i: a gateway of its own: streamable-HTTP backends and tools only, a fresh backend session per call, "+
		"initialize errors name the backend, tools/call errors pass through unnamed (look a, no health API)")
	fs.BoolVar(&initUnnamed, "init-unnamed", false, "broken, with --per-call: an initialize error passes through naming no backend")
	fs.BoolVar(&initRetry, "init-retry", false, "broken, with --per-call: a call whose initialize fails retries it every 200 ms for as long as the client waits (no timeout bounds it)")
	fs.DurationVar(&slowReopen, "slow-reopen", 0, "correct but slow: every initialize of a backend session after a backend's first is held this long "+
		"on its way to the backend (a gateway re-opening a broken backend session on a loaded machine)")
	fs.DurationVar(&slowRecovery, "slow-recovery", 0, "slow to recover: once a backend answers 404 for a session (it restarted), it is refused for this long "+
		"(its tools fail meanwhile), as a gateway that rebuilds a backend's client only after a pause")
	fs.BoolVar(&slowRecoveryDial, "slow-recovery-dial", false, "with --slow-recovery: a failed connection to a backend (it crashed or is restarting) starts the refusal too")
	fs.Var(&q.refuse, "refuse-revision", "fixture s (repeatable): every request on this protocol revision (its Mcp-Protocol-Version header, _meta or initialize's protocolVersion) "+
		"is answered -32022, while server/discover still lists it, as a gateway with its optimizer on refuses every 2026-07-28 client")
	fs.BoolVar(&discoverFirst, "discover-first", false, "fixture q, with --per-call: each backend session opens with server/discover (a 2026-07-28 backend client), not initialize")
	fs.BoolVar(&healthLies, "health-always-healthy", false, "fixture r: the health API reports every backend healthy, its circuit closed, whatever the gateway knows")
	fs.BoolVar(&httpOnly, "http-only", false, "refuse, at start, a config with a backend on any transport but streamable-http")
	fs.StringVar(&reject, "reject-feature", "", "refuse to start when the config turns this feature on (health, breaker, keepalive, metrics or optimizer), "+
		"as a gateway that does not support it, or needs more settings for it, does")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if (initUnnamed || initRetry || discoverFirst) && !perCallGW {
		return nil, fmt.Errorf("--init-unnamed, --init-retry and --discover-first need --per-call")
	}
	if slowRecoveryDial && slowRecovery <= 0 {
		return nil, fmt.Errorf("--slow-recovery-dial needs --slow-recovery")
	}
	if look != "a" && look != "b" {
		return nil, fmt.Errorf("--look %q: want a or b", look)
	}
	if q.cancelOneIn < 0 || q.cancelOneIn > 0 && q.detach {
		return nil, fmt.Errorf("--cancel-one-in %d: want N ≥ 1, without --detach-calls", q.cancelOneIn)
	}
	q.rpcErrors, q.rpcErrorCode = rpcErrorCode.set, rpcErrorCode.code
	cfg, err := vmcp.LoadConfig(cfgPath)
	if err != nil {
		return nil, err
	}
	if err := rejectFeature(cfg, cfgPath, reject); err != nil {
		return nil, err
	}
	for _, b := range cfg.Backends {
		if httpOnly && b.Transport != config.TransportStreamableHTTP {
			return nil, fmt.Errorf("config %s: backend %s: transport %q is not supported (streamable-http only)", cfgPath, b.Name, b.Transport)
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
	defer func() {
		if err != nil {
			fx.close(context.Background())
		}
	}()
	if acceptWrongID || neverBack || deadSilent || slowReopen > 0 || noResume || slowRecovery > 0 {
		opts := backProxyOptions{acceptWrongID: acceptWrongID, neverBack: neverBack || deadSilent, deadSilent: deadSilent, slowReopen: slowReopen, noResume: noResume, slowRecovery: slowRecovery, slowRecoveryDial: slowRecoveryDial}
		if fx.proxies, err = startBackProxies(cfg, opts); err != nil {
			return nil, err
		}
	}
	q.backendHosts = map[string]string{}
	for _, b := range cfg.Backends {
		q.backends = append(q.backends, b.Name)
		if u, err := url.Parse(b.URL); err == nil && u.Host != "" {
			q.backendHosts[b.Name] = u.Host
		}
	}
	q.prefixFormat = prefixFormat
	f := &front{look: look, anonymous: anonymous, healthLies: healthLies, q: &q}
	if perCallGW {
		if look != "a" {
			return nil, fmt.Errorf("--per-call: look a only")
		}
		q.noResources, q.noPrompts = true, true
		pc, err := newPerCall(context.Background(), cfg, cmp.Or(prefixFormat, "{backend}_"), perCallOptions{initUnnamed: initUnnamed, initRetry: initRetry, discoverFirst: discoverFirst})
		if err != nil {
			return nil, err
		}
		f.mcp = pc
	} else {
		g, err := vmcp.New(cfg, vmcp.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		if err != nil {
			return nil, err
		}
		f.g, f.mcp = g, g
	}
	if look == "b" {
		time.AfterFunc(indexDelay, func() { f.indexed.Store(true) })
	} else {
		f.indexed.Store(true)
	}
	fx.f = f
	return fx, nil
}

// front serves the gateway's MCP endpoint through a rewriter and its admin
// APIs in the look's shape.
type front struct {
	g         *vmcp.Gateway // the reference (nil for --per-call: no admin APIs)
	mcp       http.Handler  // the MCP endpoint: g, or fixture i's own gateway
	look      string
	anonymous bool
	// healthLies: the health API reports every backend healthy, its
	// circuit closed (--health-always-healthy).
	healthLies bool
	indexed    atomic.Bool
	q          *quirks
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
	r, stop := f.q.withCancelOneIn(r, req)
	fn := f.rewriteMessage
	if f.q.rpcErrors && req.Method == "tools/call" {
		fn = func(body []byte) []byte { return f.rewriteMessage(f.q.toRPCError(body)) }
	}
	seen := &errorSeen{fn: fn}
	rw := newRewriter(w, seen.rewrite)
	f.mcp.ServeHTTP(rw, r)
	stop()
	rw.finish()
	f.q.answered(req, seen.seen.Load())
}

// healthA is the toolhive-like health API: capitalised Go field names.
func (f *front) healthA(w http.ResponseWriter, _ *http.Request) {
	rep := f.g.Health()
	out := map[string]any{}
	for name, b := range rep.Backends {
		if f.healthLies {
			b.Status, b.CircuitState, b.ConsecutiveFailures, b.LastError = "healthy", "closed", 0, ""
		}
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
		if f.healthLies {
			h.Status, h.CircuitState, h.LastError = "healthy", "closed", ""
		}
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
