package vmcp_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// manualClock is an injectable clock for the circuit breakers.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// histogram reads a float64 histogram point with exactly these attributes.
func histogram(t *testing.T, r *sdkmetric.ManualReader, name string, kv ...attribute.KeyValue) (metricdata.HistogramDataPoint[float64], bool) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := attribute.NewSet(kv...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range h.DataPoints {
					if p.Attributes.Equals(&want) {
						return p, true
					}
				}
			}
		}
	}
	return metricdata.HistogramDataPoint[float64]{}, false
}

// TestSequenceHealthyUnhealthyOpenHalfOpenClosedAfterRestart walks one
// backend through the whole recovery: it stops (probes fail: unhealthy,
// circuit open), is restarted while the circuit is still open (calls fail
// fast and touch nothing; new sessions leave it out, the existing session
// keeps listing its tools), and after openTimeout (an injected clock) the
// probe is the half-open trial that closes the circuit. Every transition is
// counted exactly once in the metrics.
//
// Serial: its health probes time out after 250 ms and the transitions are
// exact. Beside the parallel tests (-race, a second copy of the package
// running) beta never became healthy: no probe was answered within 250 ms
// for 10 s.
func TestSequenceHealthyUnhealthyOpenHalfOpenClosedAfterRestart(t *testing.T) {
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	reader := sdkmetric.NewManualReader()
	const openTimeout = time.Minute
	g := startGateway(t, backendsYAML(nil, alpha, beta)+
		"timeouts: {call: 2s, initialize: 2s}\n"+
		"health: {interval: 300ms, timeout: 250ms, unhealthyThreshold: 2}\n"+
		"breaker: {failureThreshold: 2, openTimeout: 1m}\n",
		vmcp.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	clock := &manualClock{now: time.Now()}
	vmcp.SetBreakerClock(g, clock.Now)
	b := attribute.String("backend_id", "beta")
	transitions := func(from, to string) int64 {
		return counter(t, reader, "vmcp_circuit_breaker_transitions_total", b, attribute.String("from", from), attribute.String("to", to))
	}
	state := func() (string, string) {
		h := healthOf(t, g).Backends["beta"]
		return h.Status, h.CircuitState
	}

	// healthy
	testwait.For(t, 10*time.Second, "beta healthy", func() bool { s, _ := state(); return s == "healthy" })
	old := connect(t, g.URL(), false)
	if !hasPrefix(toolNames(t, old), "beta_") {
		t.Fatal("beta missing from a session opened while healthy")
	}

	// → unhealthy and open: the backend process stops (connection refused).
	beta.Stop()
	testwait.For(t, 10*time.Second, "beta unhealthy with its circuit open", func() bool {
		s, c := state()
		return s == "unhealthy" && c == "open"
	})

	if n := counter(t, reader, "vmcp_backend_health_state", b, attribute.String("state", "unhealthy")); n != 1 {
		t.Fatalf("health gauge unhealthy = %d, want 1", n)
	}
	if n := counter(t, reader, "vmcp_circuit_breaker_state", b, attribute.String("state", "open")); n != 1 {
		t.Fatalf("circuit gauge open = %d, want 1", n)
	}

	// The backend comes back, but the circuit stays open until openTimeout:
	// nothing reaches it, neither calls nor probes.
	if err := beta.Restart(ctxT(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	before := len(beta.Requests())
	const calls = 20
	var worst time.Duration
	for i := 0; i < calls; i++ {
		res, took := callTool(t, old, "beta_echo", nil)
		if be, kind := metaOf(res); !res.IsError || be != "beta" || kind != "circuit_open" ||
			resultText(res) != `backend "beta" unavailable: circuit open` {
			t.Fatalf("call while open: %q (meta %s %s)", resultText(res), be, kind)
		}
		worst = max(worst, took)
	}
	hp, ok := histogram(t, reader, "vmcp_backend_request_duration_seconds", b,
		attribute.String("method", "tools/call"), attribute.String("outcome", "circuit_open"))
	if !ok || hp.Count != calls {
		t.Fatalf("gateway-side duration of circuit_open calls: %d points, want %d", hp.Count, calls)
	}
	gwMax, _ := hp.Max.Value()
	t.Logf("fail-fast while open over %d calls: gateway-side mean %s, max %s; client-observed worst %s",
		calls, time.Duration(hp.Sum/float64(hp.Count)*float64(time.Second)), time.Duration(gwMax*float64(time.Second)), worst)
	// A generous does-not-hang bound: the refusal touches no network.
	if gwMax > 0.25 {
		t.Errorf("a refused call took %.3fs inside the gateway", gwMax)
	}
	// A new session leaves beta out; the existing one still lists its tools.
	fresh := connect(t, g.URL(), false)
	if names := toolNames(t, fresh); hasPrefix(names, "beta_") || !hasPrefix(names, "alpha_") {
		t.Fatalf("tools of a session opened while beta's circuit is open: %v", names)
	}
	if !hasPrefix(toolNames(t, old), "beta_") {
		t.Fatal("the existing session lost beta's tools while its circuit is open")
	}
	if after := beta.Requests(); len(after) != before {
		t.Fatalf("%d requests reached beta while its circuit was open: %+v", len(after)-before, after[before:])
	}

	// → half-open → closed: after openTimeout the next probe is the one
	// trial; the restarted backend answers it.
	clock.Advance(openTimeout)
	testwait.For(t, 10*time.Second, "circuit closed by the probe trial", func() bool { _, c := state(); return c == "closed" })
	testwait.For(t, 10*time.Second, "beta healthy again", func() bool { s, _ := state(); return s == "healthy" })
	for _, tr := range []struct {
		from, to string
		want     int64
	}{{"closed", "open", 1}, {"open", "half-open", 1}, {"half-open", "closed", 1}, {"half-open", "open", 0}} {
		if n := transitions(tr.from, tr.to); n != tr.want {
			t.Errorf("transitions %s→%s = %d, want %d", tr.from, tr.to, n, tr.want)
		}
	}
	for st, want := range map[string]int64{"closed": 1, "open": 0, "half-open": 0} {
		if n := counter(t, reader, "vmcp_circuit_breaker_state", b, attribute.String("state", st)); n != want {
			t.Errorf("circuit gauge %s = %d, want %d", st, n, want)
		}
	}
	for st, want := range map[string]int64{"healthy": 1, "unhealthy": 0, "degraded": 0} {
		if n := counter(t, reader, "vmcp_backend_health_state", b, attribute.String("state", st)); n != want {
			t.Errorf("health gauge %s = %d, want %d", st, n, want)
		}
	}
	if n := counter(t, reader, "vmcp_backend_requests_total", b, attribute.String("method", "tools/call"), attribute.String("outcome", "circuit_open")); n != calls {
		t.Errorf("circuit_open requests = %d, want %d", n, calls)
	}
	// The existing session works again (its backend session is re-created
	// after the restart); new sessions include beta.
	if res, _ := callTool(t, old, "beta_ok", nil); res.IsError || resultText(res) != "fine" {
		t.Fatalf("existing session after recovery: %q", resultText(res))
	}
	if names := toolNames(t, connect(t, g.URL(), false)); !hasPrefix(names, "beta_") {
		t.Fatalf("new session after recovery lacks beta: %v", names)
	}
}
