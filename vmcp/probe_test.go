package vmcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// An auto fake backend speaks both revisions, so a probe connection that
// negotiates lands on the stateless one, where mcp-go's Ping sends nothing.
const autoBetaScript = `name: beta
tools:
  - {name: echo, description: Echo}
  - {name: ok, description: Always fine, result: {text: fine}}
`

// TestHealthProbeMethodsReachTheBackend checks, for probe: ping and probe:
// tool:<name> on an auto backend, that the probes really reach the backend,
// that a stopped backend becomes unhealthy and a 403 on the probe
// unauthenticated, and that it recovers.
//
// Serial: its health probes time out after 150 ms. Beside the parallel
// tests (-race, a second copy of the package running) beta went unhealthy
// while its probes succeeded.
func TestHealthProbeMethodsReachTheBackend(t *testing.T) {
	for _, tc := range []struct{ probe, method, tool string }{
		{"ping", "ping", ""},
		{"tool:ok", "tools/call", "ok"},
	} {
		t.Run(tc.probe, func(t *testing.T) {
			beta := startFake(t, autoBetaScript)
			g := startGateway(t, backendsYAML(map[string]string{"beta": "    probe: \"" + tc.probe + "\"\n"}, beta)+
				"timeouts: {initialize: 2s}\nhealth: {interval: 200ms, timeout: 150ms, unhealthyThreshold: 2}\n")
			testwait.For(t, 10*time.Second, "3 probes at the backend", func() bool { return countTool(beta.Requests(), tc.method, tc.tool) >= 3 })
			if s := healthOf(t, g).Backends["beta"].Status; s != "healthy" && s != "degraded" {
				t.Fatalf("beta %s while its probes succeed", s)
			}
			for _, r := range beta.Requests() {
				if r.Method == tc.method && r.Protocol != "legacy" && tc.method == "ping" {
					t.Fatalf("ping probe on a %s connection", r.Protocol)
				}
			}

			beta.Stop()
			testwait.For(t, 10*time.Second, "beta unhealthy while stopped", func() bool { return healthOf(t, g).Backends["beta"].Status == "unhealthy" })
			if err := beta.Restart(ctxT(t, 5*time.Second)); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 10*time.Second, "beta usable after restart", func() bool {
				s := healthOf(t, g).Backends["beta"].Status
				return s == "healthy" || s == "degraded"
			})

			if err := beta.SetFaults(faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: tc.method}, Params: &faults.HTTPStatus{Status: 403}}); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 10*time.Second, "beta unauthenticated on 403 probes", func() bool { return healthOf(t, g).Backends["beta"].Status == "unauthenticated" })
			if e := healthOf(t, g).Backends["beta"].LastError; !strings.Contains(e, "403") {
				t.Fatalf("lastError %q does not name the 403", e)
			}
		})
	}
}

func TestHealthPingProbeRejectedOnModernBackend(t *testing.T) {
	t.Parallel()
	beta := startFake(t, autoBetaScript)
	cfg, err := vmcp.ParseConfig([]byte(backendsYAML(map[string]string{"beta": "    protocol: modern\n    probe: ping\n"}, beta)+
		"health: {interval: 1s, timeout: 500ms}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vmcp.New(cfg); err == nil || !strings.Contains(err.Error(), `backend "beta"`) || !strings.Contains(err.Error(), "probe: ping") {
		t.Fatalf("probe: ping on a modern backend: %v", err)
	}
}

// TestHealthProbeTimeoutIsATimeout: a probe that outlives health.timeout is
// reported as a timeout (lastError, metric outcome), not as a cancel.
//
// Serial: its health probes time out after 200 ms. Beside the parallel
// tests (-race, a second copy of the package running) beta never became
// healthy within 10 s.
func TestHealthProbeTimeoutIsATimeout(t *testing.T) {
	beta := startFake(t, resBetaScript)
	reader := sdkmetric.NewManualReader()
	g := startGateway(t, backendsYAML(nil, beta)+"timeouts: {initialize: 2s}\nhealth: {interval: 400ms, timeout: 200ms, unhealthyThreshold: 1}\n",
		vmcp.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	testwait.For(t, 10*time.Second, "beta healthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "healthy" })
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindStall, Match: faults.Match{Method: "tools/list"}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "beta unhealthy from stalled probes", func() bool { return healthOf(t, g).Backends["beta"].Status == "unhealthy" })
	if e := healthOf(t, g).Backends["beta"].LastError; !strings.Contains(e, "timed out after 200ms") || strings.Contains(e, "cancel") {
		t.Fatalf("lastError %q, want a timeout after 200ms", e)
	}
	probe := []attribute.KeyValue{attribute.String("backend_id", "beta"), attribute.String("method", "health_probe")}
	if n := counter(t, reader, "vmcp_backend_requests_total", append(probe, attribute.String("outcome", "timeout"))...); n < 1 {
		t.Fatalf("health_probe timeouts = %d, want ≥ 1", n)
	}
	if n := counter(t, reader, "vmcp_backend_requests_total", append(probe, attribute.String("outcome", "canceled"))...); n != 0 {
		t.Fatalf("health_probe canceled = %d, want 0", n)
	}
	beta.ClearFaults()
}
