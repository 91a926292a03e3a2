package vmcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/breaker"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/health"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/keepalive"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/metrics"
)

// WithMeterProvider sets the OpenTelemetry MeterProvider the gateway's
// metrics are recorded on (tests use a manual reader). With
// `metrics.prometheus: true` and no provider given, the gateway makes its
// own and serves it at GET /metrics.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.meterProvider = mp }
}

// errProbeSkipped marks a probe not sent because the circuit is open.
var errProbeSkipped = errors.New("probe skipped: circuit open")

// resilience is the gateway's health monitor, circuit breakers, keepalive
// and metrics. It is the gateway's Gate, Observer and SessionObserver, and
// passes every call on to the ones the caller configured.
type resilience struct {
	g       *Gateway
	cfg     *config.Config
	metrics *metrics.Metrics
	ownMP   *sdkmetric.MeterProvider // made for Prometheus; shut down with the gateway
	promH   http.Handler

	backends map[string]*backendResilience

	next     Gate
	observer Observer
	sessObs  SessionObserver

	loops []*health.Loop

	// clock is the circuit breakers' clock (time.Now; tests swap it).
	clock atomic.Pointer[func() time.Time]

	mu      sync.Mutex
	keepers map[*Session]map[string]*keepalive.Keeper // session → backend → its keeper
	viewUpd map[string]*viewUpdater                   // listchanged.go
	stopped bool
	bg      sync.WaitGroup // probe connections closing, view updates in flight (listchanged.go)
}

// backendResilience is one backend's health tracker and circuit.
type backendResilience struct {
	cfg     config.Backend
	tracker *health.Tracker
	breaker *breaker.Breaker // nil when the breaker is off

	probeMu   sync.Mutex
	probeConn *backend.Conn // the health monitor's own connection
}

func newResilience(g *Gateway) (*resilience, error) {
	r := &resilience{
		g: g, cfg: g.cfg,
		backends: map[string]*backendResilience{},
		next:     g.opts.gate, observer: g.opts.observer, sessObs: g.opts.sessionObserver,
		keepers: map[*Session]map[string]*keepalive.Keeper{}, viewUpd: map[string]*viewUpdater{},
	}
	now := time.Now
	r.clock.Store(&now)
	mp := g.opts.meterProvider
	if mp != nil && g.cfg.Metrics.Prometheus {
		// An injected provider's readers are fixed when it is built, so the
		// gateway cannot add a Prometheus exporter to it: GET /metrics would
		// serve nothing. Say so instead of answering 404 later.
		return nil, errors.New("metrics.prometheus: true cannot be combined with WithMeterProvider: " +
			"the gateway exports only a MeterProvider it makes itself; drop one of the two " +
			"(or add an OpenTelemetry Prometheus reader to the provider you inject and serve it yourself)")
	}
	for _, b := range g.cfg.Backends {
		if kind, _, _ := config.ProbeMethod(b.Probe, true, false); kind == "ping" && b.Protocol == config.ProtocolModern {
			return nil, fmt.Errorf("backend %q (line %d): probe: ping needs a sessionful connection, but protocol: modern "+
				"is stateless and ping is a no-op there; use probe: list or probe: tool:<name>", b.Name, b.Line)
		}
		if b.Keepalive.Method == "ping" && b.Protocol == config.ProtocolModern {
			return nil, fmt.Errorf("backend %q (line %d): keepalive.method: ping needs a sessionful connection, but protocol: modern "+
				"is stateless and ping is a no-op there; use keepalive.method: tool:<name>", b.Name, b.Line)
		}
	}
	if mp == nil && g.cfg.Metrics.Prometheus {
		own, h, err := metrics.NewPrometheus()
		if err != nil {
			return nil, err
		}
		r.ownMP, r.promH, mp = own, h, own
	}
	m, err := metrics.New(mp)
	if err != nil {
		return nil, err
	}
	r.metrics = m
	for _, b := range g.cfg.Backends {
		br := &backendResilience{cfg: b}
		name := b.Name
		r.viewUpd[name] = &viewUpdater{}
		br.tracker = health.NewTracker(health.Thresholds{
			UnhealthyThreshold: g.cfg.Health.UnhealthyThreshold,
			DegradedThreshold:  g.cfg.Health.DegradedThreshold,
		}, func(from, to health.State) {
			g.logger.Info("backend health changed", "backend", name, "from", from, "to", to)
			if !to.Usable() {
				g.shared.invalidate(name) // lists taken before it went down are not trusted after
			}
			r.availabilityMayHaveChanged(name)
		})
		if g.cfg.Breaker.Enabled {
			br.breaker = breaker.New(breaker.Config{
				FailureThreshold: g.cfg.Breaker.FailureThreshold,
				OpenTimeout:      g.cfg.Breaker.OpenTimeout,
				Now:              r.now,
				OnTransition: func(from, to breaker.State) {
					g.logger.Info("circuit changed", "backend", name, "from", from, "to", to)
					r.metrics.BreakerTransition(name, string(from), string(to))
					if to == breaker.Open {
						g.shared.invalidate(name)
					}
					r.availabilityMayHaveChanged(name)
				},
			})
		}
		r.backends[name] = br
	}
	if err := m.ObserveStates(r.gaugeStates); err != nil {
		return nil, err
	}
	if g.cfg.Health.Enabled {
		for _, b := range g.cfg.Backends {
			br := r.backends[b.Name]
			r.loops = append(r.loops, health.StartLoop(g.ctx, g.cfg.Health.Interval, g.cfg.Health.Timeout,
				func(ctx context.Context) health.Result { return r.probe(ctx, br) },
				func(res health.Result) {
					if !errors.Is(res.Err, errProbeSkipped) {
						br.tracker.Record(res)
					}
				}))
		}
	}
	return r, nil
}

// Admit implements Gate: the caller's gate first, then health (only for a
// new session's initialize, while the monitor probes) and the circuit.
func (r *resilience) Admit(backend, op string) (func(*BackendError), *BackendError) {
	nextDone := func(*BackendError) {}
	if r.next != nil {
		d, refused := r.next.Admit(backend, op)
		if refused != nil {
			return nil, refused
		}
		nextDone = d
	}
	br, ok := r.backends[backend]
	if !ok {
		return nextDone, nil
	}
	if op == "initialize" && r.cfg.Health.Enabled {
		if st := br.tracker.Status(); !st.State.Usable() {
			be := &BackendError{Backend: backend, Op: op, Kind: KindUnhealthy, Cause: string(st.State) + " (health check)", Err: errors.New(st.LastError)}
			nextDone(be)
			return nil, be
		}
	}
	if br.breaker == nil {
		return nextDone, nil
	}
	ticket, err := br.breaker.Allow()
	if err != nil {
		be := &BackendError{Backend: backend, Op: op, Kind: KindCircuitOpen, Cause: "circuit open", Err: err}
		nextDone(be)
		return nil, be
	}
	return func(be *BackendError) {
		switch {
		case be == nil || be.Kind == KindJSONRPCError:
			ticket.Done(true) // the backend answered
		case be.Kind == KindCanceled || be.Kind == KindClosed:
			ticket.Cancel() // no verdict on the backend
		default:
			ticket.Done(false)
		}
		nextDone(be)
	}, nil
}

// ObserveCall implements Observer: passive health and request metrics.
func (r *resilience) ObserveCall(ev CallEvent) {
	if r.observer != nil {
		r.observer.ObserveCall(ev)
	}
	r.metrics.BackendRequest(ev.Backend, ev.Op, outcome(ev.Err), ev.Duration)
	br, ok := r.backends[ev.Backend]
	if !ok {
		return
	}
	switch {
	case ev.Err == nil || ev.Err.Kind == KindJSONRPCError:
		// Latency is not judged on real traffic: a tool may be slow by design.
		br.tracker.Record(health.Result{})
	case ev.Err.Kind == KindCircuitOpen || ev.Err.Kind == KindUnhealthy ||
		ev.Err.Kind == KindCanceled || ev.Err.Kind == KindClosed:
		// Refused without touching the network, or no verdict.
	default:
		br.tracker.Record(health.Result{Err: ev.Err})
	}
}

// now is the breakers' clock.
func (r *resilience) now() time.Time { return (*r.clock.Load())() }

func outcome(be *BackendError) string {
	if be == nil {
		return "ok"
	}
	return string(be.Kind)
}

// probe runs one health probe on the monitor's own connection to the
// backend. While the circuit is open the probe is skipped; when it is
// half-open the probe is the one trial.
func (r *resilience) probe(ctx context.Context, br *backendResilience) health.Result {
	var ticket *breaker.Ticket
	if br.breaker != nil {
		t, err := br.breaker.Allow()
		if err != nil {
			return health.Result{Err: errProbeSkipped}
		}
		ticket = t
	}
	start := time.Now()
	be := r.probeOnce(ctx, br)
	if be != nil && (be.Kind == KindCanceled || be.Kind == KindTimeout) && errors.Is(ctx.Err(), context.DeadlineExceeded) && r.g.ctx.Err() == nil {
		// The probe's own deadline (health.timeout, set by the loop for
		// dial and request together) passed: that is a timeout, not a
		// client giving up.
		be = &BackendError{Backend: be.Backend, Op: be.Op, Kind: KindTimeout,
			Cause: "timed out after " + r.cfg.Health.Timeout.String() + " (health probe)",
			Err:   errors.Join(be.Err, context.DeadlineExceeded)}
	}
	res := health.Result{Latency: time.Since(start)}
	if be != nil {
		res.Err = be
		res.Unauthenticated = be.Status == http.StatusUnauthorized || be.Status == http.StatusForbidden
	}
	r.metrics.BackendRequest(br.cfg.Name, "health_probe", outcome(be), res.Latency)
	switch { // a nil ticket (no breaker) ignores both
	case ctx.Err() != nil && r.g.ctx.Err() != nil:
		ticket.Cancel()
	case be == nil || be.Kind == KindJSONRPCError:
		ticket.Done(true)
	default:
		ticket.Done(false)
	}
	return res
}

func (r *resilience) probeOnce(ctx context.Context, br *backendResilience) *BackendError {
	br.probeMu.Lock()
	defer br.probeMu.Unlock()
	timeout := r.cfg.Health.Timeout
	kind, tool, _ := config.ProbeMethod(br.cfg.Probe, true, false)
	if br.probeConn == nil || !br.probeConn.Alive() {
		c, be := r.dialProbe(ctx, br.cfg, kind == "ping")
		if be != nil {
			return be
		}
		br.probeConn = c
	}
	c := br.probeConn
	op := "tools/list"
	var fn func(ctx context.Context) error
	switch kind {
	case "ping":
		op = "ping"
		if mcp.IsModernProtocol(c.Protocol()) {
			// mcp-go's Ping returns nil without sending anything on a
			// stateless connection: report the misconfiguration rather
			// than a probe that never touches the backend.
			return &BackendError{Backend: br.cfg.Name, Op: op, Kind: KindTransport,
				Cause: "probe: ping is impossible: the backend speaks the stateless protocol " + c.Protocol() +
					", where ping is a no-op; use probe: list or probe: tool:<name>",
				Err: errPingStateless}
		}
		fn = func(ctx context.Context) error { return c.Client().Ping(ctx) }
	case "tool":
		op = "tools/call"
		fn = func(ctx context.Context) error {
			res, err := c.Client().CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool}})
			if err == nil && res != nil && res.IsError {
				return fmt.Errorf("tool %s returned isError", tool)
			}
			return err
		}
	default:
		fn = func(ctx context.Context) error {
			_, err := c.Client().ListTools(ctx, mcp.ListToolsRequest{})
			return err
		}
	}
	be := c.Invoke(ctx, op, timeout, fn)
	if be != nil && be.Kind != KindJSONRPCError {
		// Start afresh next time: the connection (or its backend session)
		// may be what failed.
		br.probeConn = nil
		r.bg.Go(func() { <-c.Close() })
	}
	return be
}

// errPingStateless marks a ping probe on a connection where ping is a no-op.
var errPingStateless = errors.New("ping is a no-op on a stateless connection")

// dialProbe opens the health monitor's connection. A ping probe needs a
// sessionful connection (mcp-go sends no ping on a stateless one), so for
// "auto" backends it pins the 2025-11-25 revision, on every transport,
// falling back to negotiation only if the backend refuses it.
func (r *resilience) dialProbe(ctx context.Context, b config.Backend, ping bool) (*backend.Conn, *BackendError) {
	if !ping || b.Protocol != config.ProtocolAuto {
		return r.g.dialer.Dial(ctx, b, ping)
	}
	c, be := r.g.dialer.DialPinned(ctx, b, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	if be != nil && be.Kind == KindJSONRPCError {
		return r.g.dialer.DialPinned(ctx, b, "")
	}
	return c, be
}

// SessionOpened implements SessionObserver: starts the session's keepalive
// of every backend that connected (one that connects later starts its own:
// MemberConnected).
func (r *resilience) SessionOpened(s *Session) {
	if r.sessObs != nil {
		r.sessObs.SessionOpened(s)
	}
	ks := map[string]*keepalive.Keeper{}
	for _, b := range r.cfg.Backends {
		if k := r.startKeeper(s, b); k != nil {
			ks[b.Name] = k
		}
	}
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		for _, k := range ks {
			k.Stop()
		}
		return
	}
	r.keepers[s] = ks
	r.mu.Unlock()
}

// MemberConnected starts the keepalive of a backend that connected after
// its session opened (it failed then, and came back): without it that
// session's backend session would never be probed.
func (r *resilience) MemberConnected(s *Session, name string) {
	i := slices.IndexFunc(r.cfg.Backends, func(b config.Backend) bool { return b.Name == name })
	if i < 0 {
		return
	}
	r.mu.Lock()
	ks, open := r.keepers[s]
	running := ks[name] != nil
	r.mu.Unlock()
	if !open || running {
		return
	}
	k := r.startKeeper(s, r.cfg.Backends[i])
	if k == nil {
		return
	}
	r.mu.Lock()
	ks, open = r.keepers[s]
	if r.stopped || !open || ks[name] != nil {
		// The session closed (or another start won) meanwhile.
		r.mu.Unlock()
		k.Stop()
		return
	}
	ks[name] = k
	r.mu.Unlock()
}

// startKeeper starts session s's keepalive of backend b, nil when b has
// none or is not connected in s.
func (r *resilience) startKeeper(s *Session, b config.Backend) *keepalive.Keeper {
	if b.Keepalive.Method == "" || b.Keepalive.Method == "none" {
		return nil
	}
	h, ok := s.Backend(b.Name)
	if !ok {
		return nil
	}
	method, err := keepalive.ParseMethod(b.Keepalive.Method)
	if err != nil {
		return nil // validated with the config
	}
	return keepalive.Start(s.ctx, keepalive.Config{
		Method: method, Interval: b.Keepalive.Interval, Jitter: b.Keepalive.Jitter, Timeout: b.Keepalive.Timeout,
		MaxFailures: b.Keepalive.MaxFailures, ProbeAfter: b.Keepalive.ProbeAfter,
	}, h, r.metrics.Keepalive(b.Name), h.Exclusive)
}

// SessionClosed implements SessionObserver: stops the session's keepalive.
func (r *resilience) SessionClosed(s *Session) {
	r.mu.Lock()
	ks := r.keepers[s]
	delete(r.keepers, s)
	r.mu.Unlock()
	for _, k := range ks {
		k.Stop()
	}
	if r.sessObs != nil {
		r.sessObs.SessionClosed(s)
	}
}

// stop ends probing and keepalive and releases the metrics (bounded by the
// probes' timeouts and the connections' close timeout).
func (r *resilience) stop(ctx context.Context) {
	for _, l := range r.loops {
		l.Stop()
	}
	r.mu.Lock()
	r.stopped = true
	all := r.keepers
	r.keepers = map[*Session]map[string]*keepalive.Keeper{}
	r.mu.Unlock()
	for _, ks := range all {
		for _, k := range ks {
			k.Stop()
		}
	}
	for _, br := range r.backends {
		br.probeMu.Lock()
		if c := br.probeConn; c != nil {
			br.probeConn = nil
			r.bg.Go(func() { <-c.Close() })
		}
		br.probeMu.Unlock()
	}
	r.bg.Wait()
	r.metrics.Close()
	if r.ownMP != nil {
		_ = r.ownMP.Shutdown(ctx)
	}
}

// BackendHealth is one backend's entry in GET /api/backends/health and in
// GET /status.
type BackendHealth struct {
	Status              health.State    `json:"status"`
	ConsecutiveFailures int             `json:"consecutiveFailures"`
	LastCheckTime       *time.Time      `json:"lastCheckTime"`
	LastError           string          `json:"lastError"`
	CircuitState        breaker.State   `json:"circuitState"`
	CircuitLastChanged  *time.Time      `json:"circuitLastChanged"`
	Keepalive           KeepaliveHealth `json:"keepalive"`
}

// KeepaliveHealth summarises one backend's keepalive across live sessions.
type KeepaliveHealth struct {
	// Method is the configured method ("none" when off).
	Method string `json:"method"`
	// Enabled is true while keepalive is on in at least one live session
	// (or configured and no session has started it yet).
	Enabled bool `json:"enabled"`
	// ConsecutiveFailures is the highest count among live sessions.
	ConsecutiveFailures int `json:"consecutiveFailures"`
	// Sessions is how many live sessions run keepalive for the backend.
	Sessions int `json:"sessions"`
}

// HealthSummary counts backends by state.
type HealthSummary struct {
	Total            int                  `json:"total"`
	States           map[health.State]int `json:"states"`
	Healthy          int                  `json:"healthy"`
	Unavailable      int                  `json:"unavailable"`
	CircuitOpen      int                  `json:"circuitOpen"`
	HealthMonitoring bool                 `json:"healthMonitoring"`
	CircuitBreaker   bool                 `json:"circuitBreaker"`
}

// HealthReport is the JSON of GET /api/backends/health.
type HealthReport struct {
	Backends map[string]BackendHealth `json:"backends"`
	Summary  HealthSummary            `json:"summary"`
}

// Health returns every backend's health, circuit and keepalive state: the
// one source for GET /api/backends/health and the health in GET /status.
func (g *Gateway) Health() HealthReport {
	r := g.res
	rep := HealthReport{Backends: map[string]BackendHealth{}, Summary: HealthSummary{
		Total: len(g.cfg.Backends), States: map[health.State]int{},
		HealthMonitoring: g.cfg.Health.Enabled, CircuitBreaker: g.cfg.Breaker.Enabled,
	}}
	r.mu.Lock()
	ka := map[string]KeepaliveHealth{}
	for _, ks := range r.keepers {
		for name, k := range ks {
			st, h := k.Status(), ka[name]
			ka[name] = KeepaliveHealth{Sessions: h.Sessions + 1, Enabled: h.Enabled || st.Enabled,
				ConsecutiveFailures: max(h.ConsecutiveFailures, st.ConsecutiveFailures)}
		}
	}
	r.mu.Unlock()
	for _, b := range g.cfg.Backends {
		br := r.backends[b.Name]
		st := br.tracker.Status()
		bh := BackendHealth{Status: st.State, ConsecutiveFailures: st.ConsecutiveFailures, LastError: st.LastError,
			LastCheckTime: timeOrNil(st.LastCheckTime), CircuitState: breaker.Closed}
		if br.breaker != nil {
			snap := br.breaker.Snapshot()
			bh.CircuitState, bh.CircuitLastChanged = snap.State, &snap.LastChanged
		}
		method := cmp.Or(b.Keepalive.Method, "none")
		h, ok := ka[b.Name]
		if !ok {
			h.Enabled = method != "none"
		}
		h.Method = method
		bh.Keepalive = h
		rep.Backends[b.Name] = bh
		rep.Summary.States[st.State]++
		if st.State == health.Healthy || st.State == health.Degraded {
			rep.Summary.Healthy++
		}
		if !st.State.Usable() || bh.CircuitState == breaker.Open {
			rep.Summary.Unavailable++
		}
		if bh.CircuitState == breaker.Open {
			rep.Summary.CircuitOpen++
		}
	}
	return rep
}

// gaugeStates feeds the health and circuit gauges.
func (r *resilience) gaugeStates() []metrics.BackendState {
	healthStates := make([]string, len(health.States))
	for i, s := range health.States {
		healthStates[i] = string(s)
	}
	circuitStates := []string{string(breaker.Closed), string(breaker.Open), string(breaker.HalfOpen)}
	names := slices.Sorted(maps.Keys(r.backends))
	out := make([]metrics.BackendState, 0, len(names))
	for _, n := range names {
		br := r.backends[n]
		circuit := breaker.Closed
		if br.breaker != nil {
			circuit = br.breaker.State()
		}
		out = append(out, metrics.BackendState{Backend: n, Health: string(br.tracker.Status().State), Circuit: string(circuit),
			HealthStates: healthStates, CircuitStates: circuitStates})
	}
	return out
}

// serveMetrics serves Prometheus metrics when configured.
func (g *Gateway) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if g.res.promH == nil {
		http.Error(w, "metrics are not exported: set metrics.prometheus: true", http.StatusNotFound)
		return
	}
	g.res.promH.ServeHTTP(w, r)
}
