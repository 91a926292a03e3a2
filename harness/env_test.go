package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

func twoBackends(rt runtimes.BackendRuntime) []BackendSpec {
	return []BackendSpec{
		{Script: script("alpha", fakebackends.TransportStreamableHTTP), Runtime: rt},
		{Script: script("beta", fakebackends.TransportSSE), Runtime: rt},
	}
}

func TestEnvReferenceBothRevisions(t *testing.T) {
	env := startEnv(t, Topology{Name: "wrapping", Labels: []string{"wrapping"}, Backends: twoBackends(nil)})
	if env.Target().Name() != "reference" || env.Backend("alpha") == nil || env.Backend("nope") != nil || len(env.Backends()) != 2 {
		t.Fatalf("env: target %s", env.Target().Name())
	}
	if !strings.HasPrefix(env.Gateway().MCPURL(), env.Gateway().BaseURL()) {
		t.Fatalf("urls: %s %s", env.Gateway().MCPURL(), env.Gateway().BaseURL())
	}
	ctx := ctxT(t, 60*time.Second)
	for _, rev := range history.Revisions {
		t.Run(string(rev), func(t *testing.T) {
			c, err := env.Client(ctx, rev)
			if err != nil {
				t.Fatal(err)
			}
			if rev == history.RevisionLegacy && c.SessionID() == "" {
				t.Fatal("legacy client has no session id")
			}
			names, err := c.ToolNames(ctx)
			if err != nil || len(names) != 4 {
				t.Fatalf("tools: %v %v", names, err)
			}
			if call := c.CallTool(ctx, "alpha_echo", map[string]any{"msg": "hi"}); call.Outcome != history.OutcomeOK {
				t.Fatalf("alpha_echo: %+v %v", call.CallRecord, call.Err)
			}
			if err := env.SetFaults(ctx, "beta", http403); err != nil {
				t.Fatal(err)
			}
			call := c.CallTool(ctx, "beta_echo", map[string]any{"msg": "hi"})
			if call.Outcome != history.OutcomeBackendUnavailable || call.Backend != "beta" || !call.IsError || call.Took() > failFast {
				t.Fatalf("beta_echo under 403: %+v %v", call.CallRecord, call.Err)
			}
			if call.ErrorKind == "" || call.Meta[history.MetaBackend] != "beta" {
				t.Fatalf("no vmcp _meta: %+v", call.CallRecord)
			}
			if err := env.SetFaults(ctx, "beta", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}); err != nil {
				t.Fatal(err)
			}
			rcall := c.ReadResource(ctx, "mem://beta/readme")
			if rcall.Outcome != history.OutcomeBackendUnavailable || rcall.Backend != "beta" || rcall.Err == nil {
				t.Fatalf("read under reset: %+v %v", rcall.CallRecord, rcall.Err)
			}
			pcall := c.GetPrompt(ctx, "beta_greet", nil)
			if pcall.Outcome != history.OutcomeBackendUnavailable || pcall.Backend != "beta" {
				t.Fatalf("prompt under reset: %+v %v", pcall.CallRecord, pcall.Err)
			}
			if err := env.ClearFaults(ctx, "beta"); err != nil {
				t.Fatal(err)
			}
			if call := c.CallTool(ctx, "beta_echo", map[string]any{"msg": "back"}); call.Outcome != history.OutcomeOK {
				t.Fatalf("beta_echo after clear: %+v %v", call.CallRecord, call.Err)
			}
			if rev == history.RevisionLegacy {
				states, err := env.SessionStates(ctx, c.SessionID())
				if err != nil || states["beta"].State != "connected" {
					t.Fatalf("session states: %+v %v", states, err)
				}
			}
		})
	}
	if err := env.KillBackend(ctx, "beta"); err == nil {
		t.Fatal("kill of an in-process backend succeeded")
	}
	var faults, calls int
	for _, e := range env.Recorder().Events() {
		switch e.Kind {
		case history.EventFault:
			faults++
		case history.EventCall:
			calls++
		}
	}
	if faults != 7 || calls < 14 {
		t.Fatalf("recorded %d faults, %d calls", faults, calls)
	}
	if _, err := env.HealthStates(ctx); err != nil {
		t.Fatalf("HealthStates on the reference: %v", err)
	}
	noHealth := startEnv(t, Topology{Target: targets.Reference{Caps: targets.Capabilities{targets.CapSessionAPI}}, Backends: twoBackends(nil)})
	if _, err := noHealth.HealthStates(ctx); err == nil {
		t.Fatal("HealthStates without the capability succeeded")
	}
}

func TestEnvStartFailsCleanly(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	_, err := Start(ctx, Topology{Backends: []BackendSpec{{Script: script("a", fakebackends.TransportStreamableHTTP)}, {Script: script("a", fakebackends.TransportSSE)}}})
	if err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate names: %v", err)
	}
	bad := script("bad", fakebackends.TransportStreamableHTTP)
	bad.Listen = "256.0.0.1:1"
	_, err = Start(ctx, Topology{Backends: []BackendSpec{{Script: script("good", fakebackends.TransportStreamableHTTP)}, {Script: bad}}})
	if err == nil || !strings.Contains(err.Error(), "bad") {
		t.Fatalf("bad backend: %v", err)
	}
}

// TestEnvCloseBoundedWithStall: a stalled backend with a call in flight,
// and a paused process backend, do not hold up Env.Close.
func TestEnvCloseBoundedWithStall(t *testing.T) {
	bin := chaosBin(t) // build (if need be) before any deadline starts
	ctx := ctxT(t, 60*time.Second)
	env, err := Start(ctx, Topology{Backends: []BackendSpec{
		{Script: script("alpha", fakebackends.TransportStreamableHTTP)},
		{Script: script("beta", fakebackends.TransportStreamableHTTP), Runtime: runtimes.Process{Binary: bin}},
		{Script: script("gamma", fakebackends.TransportSSE)},
	}, GatewayCallTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := env.Client(ctx, history.RevisionLegacy, history.WithCallTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetFaults(ctx, "alpha", faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageAfterHeaders}}); err != nil {
		t.Fatal(err)
	}
	if err := env.SetFaults(ctx, "gamma", faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageMidBody}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make(chan *history.Call, 3)
	for _, tool := range []string{"alpha_echo", "gamma_slow", "beta_echo"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- c.CallTool(context.Background(), tool, map[string]any{"msg": "x"})
		}()
	}
	// Let the calls reach the backends, then pause beta mid-flight.
	testwait.For(t, 5*time.Second, "alpha_echo to reach alpha", func() bool {
		fb, _ := runtimes.FakeBackend(env.Backend("alpha"))
		return fb.InFlight() > 0
	})
	if err := env.PauseBackend(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = env.Close(closeCtx)
	took := time.Since(start)
	t.Logf("Close took %v (err %v)", took, err)
	if took > 10*time.Second {
		t.Fatalf("Close took %v", took)
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight calls still running after Close")
	}
	close(results)
	for call := range results {
		if call.Outcome == history.OutcomeOK && call.Target != "beta_echo" {
			t.Errorf("stalled call %s succeeded", call.Target)
		}
	}
	if err := env.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// healthTarget is a test Target whose "gateway" only serves a health API.
// fakeHealth serves GET /api/backends/health from a mutable document.
type fakeHealth struct {
	mu  sync.Mutex
	doc string
}

func (f *fakeHealth) set(doc string) {
	f.mu.Lock()
	f.doc = doc
	f.mu.Unlock()
}

func (f *fakeHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != targets.HealthPath {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(f.doc))
}

type healthTarget struct{ fh *fakeHealth }

func (healthTarget) Name() string { return "health-only" }
func (healthTarget) Capabilities() targets.Capabilities {
	return targets.Capabilities{targets.CapHealthAPI, targets.CapBreaker}
}
func (ht healthTarget) Start(context.Context, targets.TopologyInfo) (targets.Gateway, error) {
	return &httptestGateway{srv: httptest.NewServer(ht.fh)}, nil
}

type httptestGateway struct{ srv *httptest.Server }

func (g *httptestGateway) MCPURL() string                  { return g.srv.URL + "/mcp" }
func (g *httptestGateway) BaseURL() string                 { return g.srv.URL }
func (g *httptestGateway) Close(ctx context.Context) error { g.srv.Close(); return nil }

func TestEnvPollHealth(t *testing.T) {
	fh := &fakeHealth{doc: `{"backends": [{"name": "alpha", "status": "healthy", "circuitState": "closed"}]}`}
	env := startEnv(t, Topology{Target: healthTarget{fh}, PollHealth: 10 * time.Millisecond,
		Backends: []BackendSpec{{Script: script("alpha", fakebackends.TransportStreamableHTTP)}}})
	p := env.HealthPoller()
	if p == nil {
		t.Fatal("no poller")
	}
	ctx := ctxT(t, 5*time.Second)
	if err := p.WaitForState(ctx, "alpha", "breaker", "closed"); err != nil {
		t.Fatal(err)
	}
	fh.set(`{"backends": [{"name": "alpha", "status": "unhealthy", "circuitState": "open"}]}`)
	if err := p.WaitForState(ctx, "alpha", "breaker", "open"); err != nil {
		t.Fatal(err)
	}
	states, err := env.HealthStates(ctx)
	if err != nil || states["alpha"].State != "unhealthy" {
		t.Fatalf("HealthStates %+v %v", states, err)
	}
	if n := len(env.Recorder().Transitions()); n != 4 {
		t.Fatalf("%d transitions: %+v", n, env.Recorder().Transitions())
	}
	if err := env.Require(targets.CapOptimizer); err == nil || !strings.Contains(err.Error(), "optimizer") {
		t.Fatalf("Require: %v", err)
	}
}
