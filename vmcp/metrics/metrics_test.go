package metrics

import (
	"context"
	"maps"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func sumFor(t *testing.T, m metricdata.Metrics, kv ...attribute.KeyValue) int64 {
	t.Helper()
	want := attribute.NewSet(kv...)
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if p.Attributes.Equals(&want) {
				return p.Value
			}
		}
	default:
		t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
	}
	return -1
}

func TestInstrumentsRecordExactValues(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	ka := m.Keepalive("alpha")
	ka.Attempt()
	ka.Attempt()
	ka.Success(3 * time.Millisecond)
	ka.Failure("timeout", 10*time.Millisecond)
	ka.AutoDisabled()
	m.BackendRequest("beta", "tools/call", "error", 2*time.Millisecond)
	m.BackendRequest("beta", "tools/call", "error", time.Millisecond)
	m.BreakerTransition("beta", "closed", "open")
	if err := m.ObserveStates(func() []BackendState {
		return []BackendState{{Backend: "beta", Health: "unhealthy", Circuit: "open",
			HealthStates: []string{"healthy", "unhealthy"}, CircuitStates: []string{"closed", "open", "half-open"}}}
	}); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	alpha := attribute.String("backend_id", "alpha")
	beta := attribute.String("backend_id", "beta")
	checks := []struct {
		name string
		kv   []attribute.KeyValue
		want int64
	}{
		{KeepaliveAttempts, []attribute.KeyValue{alpha}, 2},
		{KeepaliveSuccesses, []attribute.KeyValue{alpha}, 1},
		{KeepaliveFailures, []attribute.KeyValue{alpha, attribute.String("reason", "timeout")}, 1},
		{KeepaliveAutoDisabled, []attribute.KeyValue{alpha}, 1},
		{BackendRequests, []attribute.KeyValue{beta, attribute.String("method", "tools/call"), attribute.String("outcome", "error")}, 2},
		{CircuitBreakerTransition, []attribute.KeyValue{beta, attribute.String("from", "closed"), attribute.String("to", "open")}, 1},
		{BackendHealthState, []attribute.KeyValue{beta, attribute.String("state", "unhealthy")}, 1},
		{BackendHealthState, []attribute.KeyValue{beta, attribute.String("state", "healthy")}, 0},
		{CircuitBreakerState, []attribute.KeyValue{beta, attribute.String("state", "open")}, 1},
		{CircuitBreakerState, []attribute.KeyValue{beta, attribute.String("state", "half-open")}, 0},
	}
	for _, c := range checks {
		m, ok := got[c.name]
		if !ok {
			t.Fatalf("no metric %s", c.name)
		}
		if v := sumFor(t, m, c.kv...); v != c.want {
			t.Errorf("%s%v = %d, want %d", c.name, c.kv, v, c.want)
		}
	}
	h := got[KeepaliveLatency].Data.(metricdata.Histogram[float64])
	if len(h.DataPoints) != 1 || h.DataPoints[0].Count != 2 || len(h.DataPoints[0].Bounds) != len(LatencyBuckets) {
		t.Fatalf("latency histogram %+v", h.DataPoints)
	}
	m.Close()
}

func TestPrometheusScrape(t *testing.T) {
	mp, handler, err := NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Shutdown(context.Background())
	m, err := New(mp)
	if err != nil {
		t.Fatal(err)
	}
	m.BackendRequest("beta", "tools/call", "ok", 3*time.Millisecond)
	m.Keepalive("beta").Attempt()
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse scrape: %v", err)
	}
	one := func(name string) *dto.Metric {
		f := fams[name]
		if f == nil || len(f.GetMetric()) != 1 {
			t.Fatalf("%s: %v", name, f)
		}
		return f.GetMetric()[0]
	}
	labels := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	call := map[string]string{"backend_id": "beta", "method": "tools/call", "outcome": "ok"}
	if m := one(BackendRequests); m.GetCounter().GetValue() != 1 || !maps.Equal(labels(m), call) {
		t.Errorf("%s = %v", BackendRequests, m)
	}
	if m := one(KeepaliveAttempts); m.GetCounter().GetValue() != 1 || !maps.Equal(labels(m), map[string]string{"backend_id": "beta"}) {
		t.Errorf("%s = %v", KeepaliveAttempts, m)
	}
	m2 := one(BackendRequestDuration)
	h := m2.GetHistogram()
	if !maps.Equal(labels(m2), call) || h.GetSampleCount() != 1 || len(h.GetBucket()) < len(LatencyBuckets) {
		t.Fatalf("%s = %v", BackendRequestDuration, m2)
	}
	for i, b := range h.GetBucket()[:len(LatencyBuckets)] { // then +Inf, if listed
		want := uint64(0)
		if b.GetUpperBound() >= 0.003 {
			want = 1 // 3ms lands in the 0.005 bucket and above
		}
		if b.GetUpperBound() != LatencyBuckets[i] || b.GetCumulativeCount() != want {
			t.Errorf("bucket %d: le=%v count=%d, want le=%v count=%d", i, b.GetUpperBound(), b.GetCumulativeCount(), LatencyBuckets[i], want)
		}
	}
	for name := range fams {
		if strings.HasSuffix(name, "_total_total") {
			t.Errorf("counter %s doubled its _total suffix", name)
		}
	}
}
