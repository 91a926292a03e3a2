package targets_test

import (
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// refuseGate is a test "mutant": it refuses every tools/call to one
// backend as if its circuit were open.
type refuseGate struct{ backend string }

func (g refuseGate) Admit(backend, op string) (func(*vmcp.BackendError), *vmcp.BackendError) {
	if backend == g.backend && op == "tools/call" {
		return nil, &vmcp.BackendError{Backend: backend, Op: op, Kind: vmcp.KindCircuitOpen, Cause: "circuit open"}
	}
	return func(*vmcp.BackendError) {}, nil
}

// TestReferenceFeatures: the topology's features reach the reference
// gateway's configuration through the shared template; none by default.
func TestReferenceFeatures(t *testing.T) {
	t.Parallel()
	backends := []runtimes.BackendInfo{
		{Name: "a", URL: "http://127.0.0.1:1/mcp", Transport: "streamable-http",
			Keepalive: &runtimes.KeepaliveFeature{Method: "ping", Interval: 200 * time.Millisecond, Jitter: 20 * time.Millisecond, MaxFailures: 2, ProbeAfter: time.Second}},
		{Name: "b", URL: "http://127.0.0.1:2/sse", Transport: "sse"},
	}
	cfg, err := targets.Reference{}.Config(targets.TopologyInfo{CallTimeout: time.Second, Backends: backends, Features: runtimes.Features{
		Health:  &runtimes.HealthFeature{Interval: 100 * time.Millisecond, Timeout: 50 * time.Millisecond, UnhealthyThreshold: 2},
		Breaker: &runtimes.BreakerFeature{FailureThreshold: 3, OpenTimeout: time.Second},
		Metrics: true, Optimizer: true, OptimizerMaxResults: 5,
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Health.Enabled || cfg.Health.Interval != 100*time.Millisecond || cfg.Health.UnhealthyThreshold != 2 ||
		!cfg.Breaker.Enabled || cfg.Breaker.FailureThreshold != 3 || cfg.Breaker.OpenTimeout != time.Second ||
		!cfg.Metrics.Prometheus || !cfg.Optimizer.Enabled || cfg.Optimizer.MaxResults != 5 {
		t.Fatalf("features not rendered: %+v %+v %+v %+v", cfg.Health, cfg.Breaker, cfg.Metrics, cfg.Optimizer)
	}
	if k := cfg.Backends[0].Keepalive; k.Method != "ping" || k.Interval != 200*time.Millisecond || k.Jitter != 20*time.Millisecond || k.MaxFailures != 2 || k.ProbeAfter != time.Second {
		t.Fatalf("keepalive: %+v", k)
	}
	if k := cfg.Backends[1].Keepalive; k.Method != "none" {
		t.Fatalf("b's keepalive: %+v", k)
	}
	cfg, err = targets.Reference{}.Config(targets.TopologyInfo{Backends: backends[1:]})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Health.Enabled || cfg.Breaker.Enabled || cfg.Metrics.Prometheus || cfg.Optimizer.Enabled {
		t.Fatalf("features on by default: %+v %+v %+v %+v", cfg.Health, cfg.Breaker, cfg.Metrics, cfg.Optimizer)
	}
}

func TestReferenceOptionsPassThrough(t *testing.T) {
	t.Parallel()
	var seen targets.TopologyInfo
	target := targets.Reference{
		TargetName: "reference-mutant",
		Caps:       targets.Capabilities{targets.CapSessionAPI, targets.CapBreaker},
		Configure:  func(cfg *vmcp.Config) { cfg.Name = "mutant" },
		OptionsFunc: func(topo targets.TopologyInfo) []vmcp.Option {
			seen = topo
			return []vmcp.Option{vmcp.WithGate(refuseGate{backend: "beta"})}
		},
	}
	env := startEnv(t, harness.Topology{Target: target, Backends: twoBackends(nil), GatewayCallTimeout: 2 * time.Second})
	if len(seen.Backends) != 2 || seen.CallTimeout != 2*time.Second {
		t.Fatalf("OptionsFunc saw %+v", seen)
	}
	g, ok := targets.VMCP(env.Gateway())
	if !ok || g.Config().Name != "mutant" || g.Config().Timeouts.Call != 2*time.Second {
		t.Fatalf("gateway config: %v %+v", ok, g.Config())
	}
	if !env.Capabilities().Has(targets.CapBreaker) || env.Target().Name() != "reference-mutant" {
		t.Fatalf("target: %s %v", env.Target().Name(), env.Capabilities())
	}
	ctx := ctxT(t, 20*time.Second)
	c, err := env.Client(ctx, history.RevisionModern)
	if err != nil {
		t.Fatal(err)
	}
	call := c.CallTool(ctx, "beta_echo", map[string]any{"msg": "x"})
	if call.Outcome != history.OutcomeBackendUnavailable || call.ErrorKind != string(vmcp.KindCircuitOpen) {
		t.Fatalf("gated call: %+v %v", call.CallRecord, call.Err)
	}
	if call := c.CallTool(ctx, "alpha_echo", map[string]any{"msg": "x"}); call.Outcome != history.OutcomeOK {
		t.Fatalf("alpha: %+v %v", call.CallRecord, call.Err)
	}
	if fb, ok := runtimes.FakeBackend(env.Backend("alpha")); !ok || fb.Name() != "alpha" {
		t.Fatal("FakeBackend")
	}
}
