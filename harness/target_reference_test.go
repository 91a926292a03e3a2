package harness

import (
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
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

func TestReferenceOptionsPassThrough(t *testing.T) {
	var seen TopologyInfo
	target := Reference{
		TargetName: "reference-mutant",
		Caps:       Capabilities{CapSessionAPI, CapBreaker},
		Configure:  func(cfg *vmcp.Config) { cfg.Name = "mutant" },
		OptionsFunc: func(topo TopologyInfo) []vmcp.Option {
			seen = topo
			return []vmcp.Option{vmcp.WithGate(refuseGate{backend: "beta"})}
		},
	}
	env := startEnv(t, Topology{Target: target, Backends: twoBackends(nil), GatewayCallTimeout: 2 * time.Second})
	if len(seen.Backends) != 2 || seen.CallTimeout != 2*time.Second {
		t.Fatalf("OptionsFunc saw %+v", seen)
	}
	g, ok := VMCP(env.Gateway())
	if !ok || g.Config().Name != "mutant" || g.Config().Timeouts.Call != 2*time.Second {
		t.Fatalf("gateway config: %v %+v", ok, g.Config())
	}
	if !env.Capabilities().Has(CapBreaker) || env.Target().Name() != "reference-mutant" {
		t.Fatalf("target: %s %v", env.Target().Name(), env.Capabilities())
	}
	ctx := ctxT(t, 20*time.Second)
	c, err := env.Client(ctx, RevisionModern)
	if err != nil {
		t.Fatal(err)
	}
	call := c.CallTool(ctx, "beta_echo", map[string]any{"msg": "x"})
	if call.Outcome != OutcomeBackendUnavailable || call.ErrorKind != string(vmcp.KindCircuitOpen) {
		t.Fatalf("gated call: %+v %v", call.CallRecord, call.Err)
	}
	if call := c.CallTool(ctx, "alpha_echo", map[string]any{"msg": "x"}); call.Outcome != OutcomeOK {
		t.Fatalf("alpha: %+v %v", call.CallRecord, call.Err)
	}
	if fb, ok := FakeBackend(env.Backend("alpha")); !ok || fb.Name() != "alpha" {
		t.Fatal("FakeBackend")
	}
}
