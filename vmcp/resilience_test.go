package vmcp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// counter reads an int64 sum (or gauge) point with exactly these attributes.
func counter(t *testing.T, r *sdkmetric.ManualReader, name string, kv ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := attribute.NewSet(kv...)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
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
			}
		}
	}
	return 0
}

const resBetaScript = `name: beta
protocol: legacy
tools:
  - {name: echo, description: Echo}
  - {name: ok, description: Always fine, result: {text: fine}}
`

const resAlphaScript = `name: alpha
protocol: legacy
tools:
  - {name: echo, description: Echo}
`

func backendsYAML(extra map[string]string, backends ...*fakebackends.Backend) string {
	var b strings.Builder
	b.WriteString("name: test\nbackends:\n")
	for _, fb := range backends {
		s := fb.Script()
		fmt.Fprintf(&b, "  - name: %s\n    url: %q\n    transport: %s\n", s.Name, fb.URL(), s.Transport)
		if e := extra[s.Name]; e != "" {
			b.WriteString(e)
		}
	}
	return b.String()
}

func betaCalls(b *fakebackends.Backend, tool string) int {
	return countTool(b.Requests(), "tools/call", tool)
}

// Serial: the calls meant for the open circuit must all come within its
// 300 ms open timeout. Beside the parallel tests (-race, a second copy of
// the package running) they took longer, the circuit half-opened and a
// trial reached beta.
func TestBreakerOpensFailsFastAndRecoversWithExactTransitions(t *testing.T) {
	beta := startFake(t, resBetaScript)
	alpha := startFake(t, resAlphaScript)
	reader := sdkmetric.NewManualReader()
	g := startGateway(t, backendsYAML(nil, alpha, beta)+"timeouts: {call: 2s}\nbreaker: {failureThreshold: 3, openTimeout: 300ms}\n",
		vmcp.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	c := connect(t, g.URL(), false)

	if err := beta.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: 503}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		res, _ := callTool(t, c, "beta_echo", nil)
		if !res.IsError || !strings.Contains(resultText(res), `backend "beta" unavailable: HTTP 503`) {
			t.Fatalf("failure %d: %q", i, resultText(res))
		}
	}
	if st := g.Health().Backends["beta"].CircuitState; st != "open" {
		t.Fatalf("circuit %s after 3 failures, want open", st)
	}
	// Open: fail fast, without touching the network.
	before := betaCalls(beta, "echo")
	var worst time.Duration
	for i := 0; i < 20; i++ {
		res, took := callTool(t, c, "beta_echo", nil)
		if be, kind := metaOf(res); !res.IsError || be != "beta" || kind != "circuit_open" || resultText(res) != `backend "beta" unavailable: circuit open` {
			t.Fatalf("call while open: %q (meta %s %s)", resultText(res), be, kind)
		}
		worst = max(worst, took)
	}
	t.Logf("fail-fast while open: worst client-observed latency over 20 calls %s", worst)
	if worst > 500*time.Millisecond {
		t.Fatalf("calls while open took up to %s", worst)
	}
	if after := betaCalls(beta, "echo"); after != before {
		t.Fatalf("%d calls reached beta while its circuit was open", after-before)
	}
	// Other backends are unaffected, in the same session.
	if res, _ := callTool(t, c, "alpha_echo", nil); res.IsError {
		t.Fatalf("alpha while beta open: %q", resultText(res))
	}
	// The backend recovers; after openTimeout one trial closes the circuit.
	beta.ClearFaults()
	testwait.For(t, 10*time.Second, "half-open after openTimeout", func() bool { return g.Health().Backends["beta"].CircuitState == "half-open" })
	if res, _ := callTool(t, c, "beta_echo", map[string]any{"x": 1}); res.IsError {
		t.Fatalf("trial call: %q", resultText(res))
	}
	if st := g.Health().Backends["beta"].CircuitState; st != "closed" {
		t.Fatalf("circuit %s after a successful trial, want closed", st)
	}
	b := attribute.String("backend_id", "beta")
	for _, tr := range [][2]string{{"closed", "open"}, {"open", "half-open"}, {"half-open", "closed"}} {
		if n := counter(t, reader, "vmcp_circuit_breaker_transitions_total", b, attribute.String("from", tr[0]), attribute.String("to", tr[1])); n != 1 {
			t.Errorf("transitions %s→%s = %d, want 1", tr[0], tr[1], n)
		}
	}
	if n := counter(t, reader, "vmcp_circuit_breaker_state", b, attribute.String("state", "closed")); n != 1 {
		t.Errorf("circuit state gauge closed = %d, want 1", n)
	}
	if n := counter(t, reader, "vmcp_backend_requests_total", b, attribute.String("method", "tools/call"), attribute.String("outcome", "circuit_open")); n != 20 {
		t.Errorf("circuit_open requests = %d, want 20", n)
	}
}

// Serial: its circuit half-opens 200 ms after opening; the 50 callers must
// all arrive within that window, which a starved process beside the
// parallel tests cannot promise.
func TestHalfOpenAdmitsOneTrialUnder50Callers(t *testing.T) {
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(nil, beta)+"timeouts: {call: 5s}\nbreaker: {failureThreshold: 1, openTimeout: 200ms}\n")
	clients := make([]*client.Client, 10)
	for i := range clients {
		clients[i] = connect(t, g.URL(), false)
	}
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Count: 1, Match: faults.Match{Tool: "echo"}, Params: &faults.HTTPStatus{Status: 500}}); err != nil {
		t.Fatal(err)
	}
	if res, _ := callTool(t, clients[0], "beta_echo", nil); !res.IsError {
		t.Fatal("the failing call succeeded")
	}
	// The trial stalls at the backend until the test releases it, so the
	// other 49 callers certainly arrive while it is in flight.
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Tool: "echo"}, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "half-open", func() bool { return g.Health().Backends["beta"].CircuitState == "half-open" })
	before := betaCalls(beta, "echo")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var returned atomic.Int32
	kinds := map[string]int{}
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(c *client.Client) {
			defer wg.Done()
			defer returned.Add(1)
			req := mcp.CallToolRequest{}
			req.Params.Name = "beta_echo"
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res, err := c.CallTool(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				kinds["error:"+err.Error()]++
			case !res.IsError:
				kinds["ok"]++
			default:
				_, k := metaOf(res)
				kinds[k]++
			}
		}(clients[i%len(clients)])
	}
	testwait.For(t, 15*time.Second, "49 callers refused while the trial is stalled", func() bool { return returned.Load() == 49 })
	if n := beta.InFlight(); n != 1 {
		t.Fatalf("%d requests in flight at beta, want the one trial", n)
	}
	beta.ClearFaults() // releases the trial
	wg.Wait()
	if kinds["ok"] != 1 || kinds["circuit_open"] != 49 {
		t.Fatalf("50 callers in half-open: %v; want 1 ok (the trial) and 49 circuit_open", kinds)
	}
	if n := betaCalls(beta, "echo") - before; n != 1 {
		t.Fatalf("%d calls reached beta in half-open, want exactly 1", n)
	}
	if st := g.Health().Backends["beta"].CircuitState; st != "closed" {
		t.Fatalf("circuit %s after the trial, want closed", st)
	}
}

type healthJSON struct {
	Backends map[string]struct {
		Status              string     `json:"status"`
		ConsecutiveFailures int        `json:"consecutiveFailures"`
		LastCheckTime       *time.Time `json:"lastCheckTime"`
		LastError           string     `json:"lastError"`
		CircuitState        string     `json:"circuitState"`
		Keepalive           struct {
			Enabled             bool `json:"enabled"`
			ConsecutiveFailures int  `json:"consecutiveFailures"`
		} `json:"keepalive"`
	} `json:"backends"`
	Summary map[string]any `json:"summary"`
}

type statusJSON struct {
	Backends []struct {
		Name   string `json:"name"`
		Health struct {
			Status       string `json:"status"`
			CircuitState string `json:"circuitState"`
		} `json:"health"`
	} `json:"backends"`
}

func healthOf(t *testing.T, g *vmcp.Gateway) healthJSON {
	var h healthJSON
	getJSON(t, "http://"+g.Addr()+"/api/backends/health", &h)
	return h
}

// Serial: its health probes time out after 250 ms. Beside the parallel
// tests (-race, a second copy of the package running) beta was not usable
// again within 5 s of its recovery.
func TestHealthMonitorExcludesUnhealthyBackendsFromNewSessions(t *testing.T) {
	beta := startFake(t, resBetaScript)
	alpha := startFake(t, resAlphaScript)
	g := startGateway(t, backendsYAML(nil, alpha, beta)+
		"timeouts: {call: 2s, initialize: 2s}\nhealth: {interval: 300ms, timeout: 250ms, unhealthyThreshold: 2}\n")
	testwait.For(t, 5*time.Second, "beta healthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "healthy" })
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "beta unhealthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "unhealthy" })
	h := healthOf(t, g)
	if hb := h.Backends["beta"]; hb.ConsecutiveFailures < 2 || hb.LastError == "" || hb.LastCheckTime == nil {
		t.Fatalf("beta health %+v", hb)
	}
	if s := h.Backends["alpha"].Status; s != "healthy" && s != "degraded" {
		t.Fatalf("alpha %s while beta is down", s)
	}
	// /status shows the same states (status and circuit), read back to back
	// while nothing changes (beta stays down; alpha only stays usable).
	var st statusJSON
	getJSON(t, "http://"+g.Addr()+"/status", &st)
	h = healthOf(t, g)
	if len(st.Backends) != 2 {
		t.Fatalf("/status lists %d backends", len(st.Backends))
	}
	for _, b := range st.Backends {
		hb := h.Backends[b.Name]
		if b.Name == "beta" && (b.Health.Status != hb.Status || b.Health.CircuitState != hb.CircuitState) {
			t.Fatalf("/status says %+v, /api/backends/health %s/%s for %s", b.Health, hb.Status, hb.CircuitState, b.Name)
		}
		if b.Health.CircuitState != hb.CircuitState || b.Health.CircuitState != "closed" {
			t.Fatalf("circuit of %s: /status %q, health %q", b.Name, b.Health.CircuitState, hb.CircuitState)
		}
	}
	// A new session leaves beta out; alpha works.
	c := connect(t, g.URL(), false)
	for _, n := range toolNames(t, c) {
		if strings.HasPrefix(n, "beta_") {
			t.Fatalf("unhealthy beta's tool %s is in a new session", n)
		}
	}
	if res, _ := callTool(t, c, "alpha_echo", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	// Recovery: probes bring it back; new sessions include it.
	beta.ClearFaults()
	testwait.For(t, 5*time.Second, "beta usable again", func() bool {
		s := healthOf(t, g).Backends["beta"].Status
		return s == "healthy" || s == "degraded"
	})

	c2 := connect(t, g.URL(), false)
	if res, _ := callTool(t, c2, "beta_ok", nil); res.IsError || resultText(res) != "fine" {
		t.Fatalf("beta after recovery: %q", resultText(res))
	}
}

// Serial: its health probes time out after 250 ms, as in
// TestHealthMonitorExcludesUnhealthyBackendsFromNewSessions, which failed
// beside the parallel tests.
func TestHealthUnauthenticatedOn403Probe(t *testing.T) {
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(nil, beta)+"health: {interval: 300ms, timeout: 250ms}\n")
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/list"}, Params: &faults.HTTPStatus{Status: 403}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "beta unauthenticated", func() bool { return healthOf(t, g).Backends["beta"].Status == "unauthenticated" })
}

// Serial: its keepalive probes time out after 100 ms and the counters are
// exact. Beside the parallel tests (-race, a second copy of the package
// running) a starved probe failed and the counts were off.
func TestKeepaliveCountersThroughGateway(t *testing.T) {
	beta := startFake(t, resBetaScript)
	reader := sdkmetric.NewManualReader()
	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: \"tool:ok\", interval: 100ms, jitter: 10ms, timeout: 100ms, maxFailures: 2, probeAfter: 400ms}\n",
	}, beta)+"timeouts: {call: 2s}\n",
		vmcp.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	connect(t, g.URL(), false)
	b := attribute.String("backend_id", "beta")
	testwait.For(t, 5*time.Second, "3 keepalive probes", func() bool { return betaCalls(beta, "ok") >= 3 })
	// Probes start every interval ± jitter, counted from each probe's
	// start. beta logs arrivals, and a probe's transit shifts one gap (a
	// probe that arrived late leaves a short gap to the next: 62 ms under
	// .ci/load): the mean gap is at least interval − jitter, and no gap is
	// under half the interval (measured gaps are logged).
	var first, last time.Time
	n := 0
	for _, r := range beta.Requests() {
		if r.Method == "tools/call" && r.Tool == "ok" {
			if !last.IsZero() {
				gap := r.Time.Sub(last)
				t.Logf("keepalive gap %s", gap)
				if gap < 50*time.Millisecond {
					t.Errorf("keepalive gap %s < half the interval (50ms)", gap)
				}
			} else {
				first = r.Time
			}
			last = r.Time
			n++
		}
	}
	if mean := last.Sub(first) / time.Duration(max(1, n-1)); n > 1 && mean < 90*time.Millisecond {
		t.Errorf("mean keepalive gap %s < interval - jitter (90ms)", mean)
	}
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindToolError, Match: faults.Match{Tool: "ok"}, Params: &faults.ToolError{Text: "sick"}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "keepalive auto-disabled", func() bool { return !healthOf(t, g).Backends["beta"].Keepalive.Enabled })
	if n := counter(t, reader, "vmcp_keepalive_failure_total", b, attribute.String("reason", "tool_call_failed")); n != 2 {
		t.Fatalf("failures = %d, want exactly maxFailures (2)", n)
	}
	if n := counter(t, reader, "vmcp_keepalive_auto_disabled_total", b); n != 1 {
		t.Fatalf("auto_disabled = %d, want 1", n)
	}
	beta.ClearFaults()
	testwait.For(t, 5*time.Second, "keepalive re-enabled after probeAfter", func() bool { return healthOf(t, g).Backends["beta"].Keepalive.Enabled })
	attempts := counter(t, reader, "vmcp_keepalive_attempt_total", b)
	successes := counter(t, reader, "vmcp_keepalive_success_total", b)
	failures := counter(t, reader, "vmcp_keepalive_failure_total", b, attribute.String("reason", "tool_call_failed"))
	if failures != 2 || attempts < successes+failures || attempts > successes+failures+1 {
		t.Fatalf("after re-probe: attempts %d, successes %d, failures %d", attempts, successes, failures)
	}
}

func TestKeepaliveToolNotConfigured(t *testing.T) {
	t.Parallel()
	beta := startFake(t, resBetaScript)
	reader := sdkmetric.NewManualReader()
	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: \"tool:nosuch\", interval: 20ms}\n",
	}, beta), vmcp.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	connect(t, g.URL(), false)
	connect(t, g.URL(), false)
	b := attribute.String("backend_id", "beta")
	if n := counter(t, reader, "vmcp_keepalive_failure_total", b, attribute.String("reason", "keepalive_tool_name_not_configured")); n != 2 {
		t.Fatalf("tool-not-configured failures = %d, want one per session (2)", n)
	}
	time.Sleep(60 * time.Millisecond)
	if n := betaCalls(beta, "nosuch"); n != 0 {
		t.Fatalf("%d keepalive calls to a tool the backend lacks", n)
	}
}

// scrapeProm GETs /metrics and parses the Prometheus text format.
func scrapeProm(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t, 5*time.Second), http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// promMetric returns the series of family name with exactly these labels.
func promMetric(fams map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			if got[k] != v {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

func TestMetricsPrometheusEndpointParsed(t *testing.T) {
	t.Parallel()
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(nil, beta)+"metrics: {prometheus: true}\nbreaker: {failureThreshold: 5}\n")
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "beta_ok", nil); res.IsError {
		t.Fatal(resultText(res))
	}
	fams := scrapeProm(t, "http://"+g.Addr()+"/metrics")
	call := map[string]string{"backend_id": "beta", "method": "tools/call", "outcome": "ok"}
	if m := promMetric(fams, "vmcp_backend_requests_total", call); m == nil || fams["vmcp_backend_requests_total"].GetType() != dto.MetricType_COUNTER || m.GetCounter().GetValue() != 1 {
		t.Errorf("vmcp_backend_requests_total%v = %v, want counter 1", call, m)
	}
	if m := promMetric(fams, "vmcp_backend_request_duration_seconds", call); m == nil || m.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("vmcp_backend_request_duration_seconds%v = %v, want one sample", call, m)
	} else {
		var bounds []float64
		for _, b := range m.GetHistogram().GetBucket() {
			bounds = append(bounds, b.GetUpperBound())
		}
		if len(bounds) == 0 || bounds[0] != 0.0005 {
			t.Errorf("duration buckets %v, want the explicit sub-second ones starting at 0.0005", bounds)
		}
	}
	for st, want := range map[string]float64{"closed": 1, "open": 0, "half-open": 0} {
		if m := promMetric(fams, "vmcp_circuit_breaker_state", map[string]string{"backend_id": "beta", "state": st}); m == nil || m.GetGauge().GetValue() != want {
			t.Errorf("vmcp_circuit_breaker_state{state=%q} = %v, want %v", st, m, want)
		}
	}
	// No health monitor configured: the state comes from real traffic.
	if m := promMetric(fams, "vmcp_backend_health_state", map[string]string{"backend_id": "beta", "state": "healthy"}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("vmcp_backend_health_state{healthy} = %v, want 1", m)
	}
	if m := promMetric(fams, "vmcp_backend_health_state", map[string]string{"backend_id": "beta", "state": "unhealthy"}); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("vmcp_backend_health_state{unhealthy} = %v, want 0", m)
	}
	if t.Failed() {
		for n := range fams {
			t.Log(n)
		}
	}
}

func TestMetricsPrometheusWithInjectedProviderRejected(t *testing.T) {
	t.Parallel()
	beta := startFake(t, resBetaScript)
	cfg, err := vmcp.ParseConfig([]byte(backendsYAML(nil, beta)+"metrics: {prometheus: true}\n"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = vmcp.New(cfg, vmcp.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))))
	if err == nil || !strings.Contains(err.Error(), "metrics.prometheus: true cannot be combined with WithMeterProvider") {
		t.Fatalf("New with both a MeterProvider and metrics.prometheus: %v", err)
	}
	// Without Prometheus, /metrics says how to turn it on.
	g := startGateway(t, backendsYAML(nil, beta))
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + g.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "metrics.prometheus: true") {
		t.Fatalf("/metrics without prometheus: %s %q", resp.Status, body)
	}
}

// TestHealthJSONExactKeys decodes GET /api/backends/health without Go's
// case-insensitive field matching: every key is the exact lowercase-first
// name the API promises.
//
// Serial: its health probes time out after 250 ms. Beside the parallel
// tests (-race, a second copy of the package running) a starved probe timed
// out and beta was not healthy when the JSON was read.
func TestHealthJSONExactKeys(t *testing.T) {
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: \"tool:ok\", interval: 1h}\n",
	}, beta)+"health: {interval: 300ms, timeout: 250ms}\nbreaker: {failureThreshold: 5}\n")
	testwait.For(t, 10*time.Second, "a probe result", func() bool { return healthOf(t, g).Backends["beta"].LastCheckTime != nil })
	var raw map[string]any
	getJSON(t, "http://"+g.Addr()+"/api/backends/health", &raw)
	keys := func(v any) []string {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v is not an object", v)
		}
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	if got := keys(raw); fmt.Sprint(got) != "[backends summary]" {
		t.Fatalf("top-level keys %v", got)
	}
	b := raw["backends"].(map[string]any)["beta"]
	if got := fmt.Sprint(keys(b)); got != "[circuitLastChanged circuitState consecutiveFailures keepalive lastCheckTime lastError status]" {
		t.Fatalf("backend keys %s", got)
	}
	bm := b.(map[string]any)
	if bm["status"] != "healthy" || bm["circuitState"] != "closed" || bm["consecutiveFailures"] != float64(0) {
		t.Fatalf("beta %v", bm)
	}
	for _, k := range []string{"lastCheckTime", "circuitLastChanged"} {
		if s, ok := bm[k].(string); !ok {
			t.Fatalf("%s = %v, want a time", k, bm[k])
		} else if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	ka := bm["keepalive"].(map[string]any)
	if got := fmt.Sprint(keys(ka)); got != "[consecutiveFailures enabled method sessions]" {
		t.Fatalf("keepalive keys %s", got)
	}
	if ka["enabled"] != true || ka["consecutiveFailures"] != float64(0) || ka["method"] != "tool:ok" {
		t.Fatalf("keepalive %v", ka)
	}
	sum := raw["summary"].(map[string]any)
	if got := fmt.Sprint(keys(sum)); got != "[circuitBreaker circuitOpen healthMonitoring healthy states total unavailable]" {
		t.Fatalf("summary keys %s", got)
	}
	if sum["total"] != float64(1) || sum["healthy"] != float64(1) || sum["unavailable"] != float64(0) || sum["healthMonitoring"] != true || sum["circuitBreaker"] != true {
		t.Fatalf("summary %v", sum)
	}
}

// TestKeepaliveStopsWhenSessionCloses: after the client session closes, no
// keepalive probe reaches the backend any more.
func TestKeepaliveStopsWhenSessionCloses(t *testing.T) {
	t.Parallel()
	beta := startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: \"tool:ok\", interval: 20ms, jitter: 2ms}\n",
	}, beta)+"timeouts: {call: 2s}\n")
	c, err := tryConnect(g.URL(), false)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "keepalive probes", func() bool { return betaCalls(beta, "ok") >= 2 })
	id := c.GetSessionId()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the session to close", func() bool { _, ok := g.Session(id); return !ok })
	testwait.For(t, 10*time.Second, "keepalive gone from the health API", func() bool {
		return healthOf(t, g).Backends["beta"].Keepalive.ConsecutiveFailures == 0 && sessionsWithKeepalive(t, g) == 0
	})

	n := betaCalls(beta, "ok")
	// Ten intervals without a probe: the keeper is stopped (Stop waits for
	// its goroutine), so none can come; the wait only gives a leak a chance
	// to show.
	gomega.NewWithT(t).Consistently(func() int { return betaCalls(beta, "ok") - n }).
		WithTimeout(10*20*time.Millisecond).WithPolling(5*time.Millisecond).
		Should(gomega.BeZero(), "keepalive probes after the session closed")
}

func sessionsWithKeepalive(t *testing.T, g *vmcp.Gateway) int {
	var raw struct {
		Backends map[string]struct {
			Keepalive struct {
				Sessions int `json:"sessions"`
			} `json:"keepalive"`
		} `json:"backends"`
	}
	getJSON(t, "http://"+g.Addr()+"/api/backends/health", &raw)
	return raw.Backends["beta"].Keepalive.Sessions
}
