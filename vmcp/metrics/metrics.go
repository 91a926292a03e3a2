// Package metrics holds the gateway's OpenTelemetry instruments: keepalive,
// backend requests, health and circuit-breaker state. The MeterProvider is
// injected; NewPrometheus makes one that serves GET /metrics.
package metrics

import (
	"cmp"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/keepalive"
)

// Instrument names.
const (
	KeepaliveAttempts        = "vmcp_keepalive_attempt_total"
	KeepaliveSuccesses       = "vmcp_keepalive_success_total"
	KeepaliveFailures        = "vmcp_keepalive_failure_total"
	KeepaliveLatency         = "vmcp_keepalive_latency_seconds"
	KeepaliveAutoDisabled    = "vmcp_keepalive_auto_disabled_total"
	BackendRequests          = "vmcp_backend_requests_total"
	BackendRequestDuration   = "vmcp_backend_request_duration_seconds"
	BackendHealthState       = "vmcp_backend_health_state"
	CircuitBreakerState      = "vmcp_circuit_breaker_state"
	CircuitBreakerTransition = "vmcp_circuit_breaker_transitions_total"
)

// LatencyBuckets are the explicit sub-second histogram boundaries (seconds).
var LatencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// Metrics is the set of instruments. The zero value is not usable; a nil
// *Metrics records nothing.
type Metrics struct {
	kaAttempts, kaSuccesses, kaFailures, kaDisabled metric.Int64Counter
	kaLatency                                       metric.Float64Histogram
	requests                                        metric.Int64Counter
	requestDuration                                 metric.Float64Histogram
	transitions                                     metric.Int64Counter
	healthGauge, breakerGauge                       metric.Int64ObservableGauge
	meter                                           metric.Meter

	mu  sync.Mutex
	reg metric.Registration

	// requestAttrs caches BackendRequest's attribute set per backend,
	// method and outcome (a few dozen: configured backends × MCP methods ×
	// error kinds), so a request does not build and sort it again.
	requestAttrs sync.Map // requestKey → metric.MeasurementOption
}

type requestKey struct{ backend, method, outcome string }

// BackendState is one backend's current states, read by the gauges.
type BackendState struct {
	Backend       string
	Health        string
	Circuit       string
	HealthStates  []string // every health state, for one series per state
	CircuitStates []string // every circuit state
}

// New creates the instruments on mp (nil: a no-op provider).
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := &Metrics{meter: mp.Meter("github.com/vmcp-chaos/vmcp-chaos/vmcp")}
	var err error // the first error: no Metrics then
	counter := func(name, desc string) metric.Int64Counter {
		c, e := m.meter.Int64Counter(name, metric.WithDescription(desc))
		err = cmp.Or(err, e)
		return c
	}
	hist := func(name, desc string) metric.Float64Histogram {
		h, e := m.meter.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("s"),
			metric.WithExplicitBucketBoundaries(LatencyBuckets...))
		err = cmp.Or(err, e)
		return h
	}
	gauge := func(name, desc string) metric.Int64ObservableGauge {
		g, e := m.meter.Int64ObservableGauge(name, metric.WithDescription(desc))
		err = cmp.Or(err, e)
		return g
	}
	m.kaAttempts = counter(KeepaliveAttempts, "Keepalive probes attempted")
	m.kaSuccesses = counter(KeepaliveSuccesses, "Keepalive probes that succeeded")
	m.kaFailures = counter(KeepaliveFailures, "Keepalive probes that failed, by reason")
	m.kaDisabled = counter(KeepaliveAutoDisabled, "Times keepalive disabled itself after repeated failures")
	m.kaLatency = hist(KeepaliveLatency, "Keepalive probe latency")
	m.requests = counter(BackendRequests, "Backend requests by method and outcome")
	m.requestDuration = hist(BackendRequestDuration, "Backend request duration")
	m.transitions = counter(CircuitBreakerTransition, "Circuit breaker state transitions")
	m.healthGauge = gauge(BackendHealthState, "1 for the backend's current health state, 0 for the others")
	m.breakerGauge = gauge(CircuitBreakerState, "1 for the backend's current circuit state, 0 for the others")
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ObserveStates makes the state gauges report what states() returns at each
// collection. A second call replaces the first.
func (m *Metrics) ObserveStates(states func() []BackendState) error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reg != nil {
		_ = m.reg.Unregister()
	}
	reg, err := m.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, s := range states() {
			for _, st := range s.HealthStates {
				o.ObserveInt64(m.healthGauge, boolInt(st == s.Health), metric.WithAttributes(
					attribute.String("backend_id", s.Backend), attribute.String("state", st)))
			}
			for _, st := range s.CircuitStates {
				o.ObserveInt64(m.breakerGauge, boolInt(st == s.Circuit), metric.WithAttributes(
					attribute.String("backend_id", s.Backend), attribute.String("state", st)))
			}
		}
		return nil
	}, m.healthGauge, m.breakerGauge)
	m.reg = reg
	return err
}

// Close unregisters the gauge callback.
func (m *Metrics) Close() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.reg != nil {
		_ = m.reg.Unregister()
		m.reg = nil
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// BackendRequest records one backend request.
func (m *Metrics) BackendRequest(backend, method, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	key := requestKey{backend, method, outcome}
	cached, ok := m.requestAttrs.Load(key)
	if !ok {
		cached, _ = m.requestAttrs.LoadOrStore(key, metric.WithAttributes(attribute.String("backend_id", backend),
			attribute.String("method", method), attribute.String("outcome", outcome)))
	}
	attrs := cached.(metric.MeasurementOption)
	m.requests.Add(context.Background(), 1, attrs)
	m.requestDuration.Record(context.Background(), d.Seconds(), attrs)
}

// BreakerTransition records one circuit state change.
func (m *Metrics) BreakerTransition(backend, from, to string) {
	if m == nil {
		return
	}
	m.transitions.Add(context.Background(), 1, metric.WithAttributes(attribute.String("backend_id", backend),
		attribute.String("from", from), attribute.String("to", to)))
}

// Keepalive returns a keepalive.Recorder that counts one backend's probes.
func (m *Metrics) Keepalive(backend string) keepalive.Recorder {
	return keepaliveRecorder{m: m, attrs: metric.WithAttributes(attribute.String("backend_id", backend)), backend: backend}
}

type keepaliveRecorder struct {
	m       *Metrics
	attrs   metric.MeasurementOption
	backend string
}

func (r keepaliveRecorder) Attempt() {
	if r.m != nil {
		r.m.kaAttempts.Add(context.Background(), 1, r.attrs)
	}
}

func (r keepaliveRecorder) Success(latency time.Duration) {
	if r.m != nil {
		r.m.kaSuccesses.Add(context.Background(), 1, r.attrs)
		r.m.kaLatency.Record(context.Background(), latency.Seconds(), r.attrs)
	}
}

func (r keepaliveRecorder) Failure(reason string, latency time.Duration) {
	if r.m != nil {
		r.m.kaFailures.Add(context.Background(), 1, metric.WithAttributes(
			attribute.String("backend_id", r.backend), attribute.String("reason", reason)))
		if latency > 0 {
			r.m.kaLatency.Record(context.Background(), latency.Seconds(), r.attrs)
		}
	}
}

func (r keepaliveRecorder) AutoDisabled() {
	if r.m != nil {
		r.m.kaDisabled.Add(context.Background(), 1, r.attrs)
	}
}

// NewPrometheus returns a MeterProvider exported in Prometheus text format
// and the handler that serves it (mount it at /metrics). Counters keep their
// `_total` names. Shut the provider down when done.
func NewPrometheus() (*sdkmetric.MeterProvider, http.Handler, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	return mp, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
