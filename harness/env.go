package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// BackendSpec is one backend of a topology.
type BackendSpec struct {
	// Script is what the backend serves and how it fails.
	Script *fakebackends.Script
	// Runtime runs it (default InProcess{}).
	Runtime runtimes.BackendRuntime
}

// Topology is a gateway under test in front of fake backends.
type Topology struct {
	// Name names the scenario (the recorder's name when Recorder is nil).
	Name string
	// Labels label the scenario in results.
	Labels []string
	// Backends are started in parallel, before the gateway.
	Backends []BackendSpec
	// Target is the gateway under test (default Reference{}).
	Target targets.Target
	// GatewayCallTimeout is the backend call timeout the gateway is
	// configured with (default DefaultGatewayCallTimeout).
	GatewayCallTimeout time.Duration
	// PollHealth, when positive and the target has CapHealthAPI, starts a
	// HealthPoller with this interval once the gateway is up, so every
	// health and breaker transition lands on the timeline.
	PollHealth time.Duration
	// Features are optional gateway features to configure (health
	// monitor, breaker, keepalive, metrics, optimizer).
	Features runtimes.Features
	// ClientOptions apply to every Env.Client.
	ClientOptions []history.ClientOption
	// Recorder records the timeline (default: a new one).
	Recorder *history.Recorder
	// WrapTarget, when set, replaces Target before anything starts (the
	// container scenarios run the run's target as a container on the
	// topology's network). An error wrapping *SkipError skips the scenario.
	WrapTarget func(targets.Target) (targets.Target, error)
}

// Env is a started topology: the backends, the gateway, the clients made
// with Client and the recorder. Close tears everything down.
type Env struct {
	topo     Topology
	info     targets.TopologyInfo // what the target was started with
	target   targets.Target
	rec      *history.Recorder
	gateway  targets.Gateway
	backends []runtimes.RunningBackend
	byName   map[string]runtimes.RunningBackend

	mu      sync.Mutex
	clients []*history.Client
	pollers []*targets.HealthPoller
	closed  bool
}

// Start starts the backends (in parallel), then the gateway. On failure it
// closes whatever it started and returns the error. ctx bounds the start
// only.
func Start(ctx context.Context, topo Topology) (*Env, error) {
	if topo.Target == nil {
		topo.Target = targets.Reference{}
	}
	if topo.WrapTarget != nil {
		t, err := topo.WrapTarget(topo.Target)
		if err != nil {
			return nil, err
		}
		topo.Target = t
	}
	rec := topo.Recorder
	if rec == nil {
		rec = history.NewRecorder(topo.Name, topo.Labels...)
	}
	e := &Env{topo: topo, target: topo.Target, rec: rec, byName: map[string]runtimes.RunningBackend{}}
	for i, bs := range topo.Backends {
		if bs.Script == nil {
			return nil, fmt.Errorf("harness: backends[%d]: nil script", i)
		}
		if _, dup := e.byName[bs.Script.Name]; dup || bs.Script.Name == "" {
			return nil, fmt.Errorf("harness: backends[%d]: missing or duplicate name %q", i, bs.Script.Name)
		}
		e.byName[bs.Script.Name] = nil
	}

	e.backends = make([]runtimes.RunningBackend, len(topo.Backends))
	err := inParallel(len(topo.Backends), func(i int) (err error) {
		rt := topo.Backends[i].Runtime
		if rt == nil {
			rt = runtimes.InProcess{}
		}
		e.backends[i], err = rt.Start(ctx, topo.Backends[i].Script)
		return err
	})
	if err != nil {
		_ = e.closeBackends(context.Background())
		return nil, err
	}
	e.info = targets.TopologyInfo{CallTimeout: topo.GatewayCallTimeout, Features: topo.Features}
	for i, b := range e.backends {
		e.byName[b.Name()] = b
		bi := b.Info()
		if ka, ok := topo.Features.Keepalive[b.Name()]; ok {
			bi.Keepalive = &ka
		}
		bi.Tools = make([]string, 0, len(topo.Backends[i].Script.Tools))
		for _, t := range topo.Backends[i].Script.Tools {
			bi.Tools = append(bi.Tools, t.Name)
		}
		e.info.Backends = append(e.info.Backends, bi)
	}
	g, err := e.target.Start(ctx, e.info)
	if err != nil {
		_ = e.closeBackends(context.Background())
		return nil, &targets.TargetStartError{Target: e.target.Name(), Err: err}
	}
	e.gateway = g
	rec.Note("topology up: target %s, %d backends", e.target.Name(), len(e.backends))
	if topo.PollHealth > 0 && e.Capabilities().Has(targets.CapHealthAPI) {
		if _, err := e.StartHealthPoller(topo.PollHealth); err != nil {
			_ = e.Close(context.Background())
			return nil, err
		}
	}
	return e, nil
}

// Recorder returns the timeline recorder.
func (e *Env) Recorder() *history.Recorder { return e.rec }

// Target returns the gateway under test's target.
func (e *Env) Target() targets.Target { return e.target }

// Capabilities returns the target's capabilities.
func (e *Env) Capabilities() targets.Capabilities { return e.target.Capabilities() }

// Gateway returns the running gateway.
func (e *Env) Gateway() targets.Gateway { return e.gateway }

// Backend returns the backend named name, or nil.
func (e *Env) Backend(name string) runtimes.RunningBackend { return e.byName[name] }

// Backends returns the backends in topology order.
func (e *Env) Backends() []runtimes.RunningBackend {
	return append([]runtimes.RunningBackend(nil), e.backends...)
}

// HealthPoller returns the first health poller started (by
// Topology.PollHealth or StartHealthPoller), or nil.
func (e *Env) HealthPoller() *targets.HealthPoller {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.pollers) == 0 {
		return nil
	}
	return e.pollers[0]
}

// Elapsed returns the monotonic time since the recorder started.
func (e *Env) Elapsed() time.Duration { return e.rec.Since() }

// Note records free text on the timeline.
func (e *Env) Note(format string, args ...any) { e.rec.Note(format, args...) }

// Client connects a new recorded client to the gateway on the given
// revision (Topology.ClientOptions, then opts). Env.Close closes it.
func (e *Env) Client(ctx context.Context, rev history.Revision, opts ...history.ClientOption) (*history.Client, error) {
	names := make([]string, 0, len(e.backends))
	for _, b := range e.backends {
		names = append(names, b.Name())
	}
	first := []history.ClientOption{history.WithBackends(names...)}
	if h := targets.HeadersOf(e.target).MCP; len(h) > 0 {
		first = append(first, history.WithHeaders(h))
	}
	all := append(append(first, e.topo.ClientOptions...), opts...)
	c, err := history.Dial(ctx, e.gateway.MCPURL(), rev, e.rec, all...)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		_ = c.Close(context.Background())
		return nil, errors.New("harness: env closed")
	}
	e.clients = append(e.clients, c)
	return c, nil
}

// GatewayCallTimeout is the backend call timeout the gateway was
// configured with.
func (e *Env) GatewayCallTimeout() time.Duration { return e.info.GatewayCallTimeout() }

// DefaultEnvCloseTimeout bounds Env.Close when its ctx has no deadline,
// unless the components need longer (CloseTimeout).
const DefaultEnvCloseTimeout = 20 * time.Second

// CloseTimeout is how long Close may take: DefaultEnvCloseTimeout, or
// more when the gateway's Close plus the slowest backend's (closed in
// parallel, after the gateway) may take longer (see CloseTimeouter).
func (e *Env) CloseTimeout() time.Duration {
	var gw, slowest time.Duration
	if e.gateway != nil {
		gw = runtimes.CloseTimeoutOf(e.gateway)
	}
	for _, b := range e.backends {
		if b != nil {
			slowest = max(slowest, runtimes.CloseTimeoutOf(b))
		}
	}
	return max(DefaultEnvCloseTimeout, gw+slowest)
}

// Close tears the topology down, bounded by ctx (default
// Env.CloseTimeout) even when backends or the gateway stall: health
// pollers stop, clients close (their connections are cut after a grace),
// the gateway closes, then the backends close in parallel. Every error is
// collected; nothing waits past the deadline. Safe to call twice.
func (e *Env) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	clients, pollers := e.clients, e.pollers
	e.mu.Unlock()
	ctx, cancel := runtimes.WithDefaultTimeout(ctx, e.CloseTimeout())
	defer cancel()

	for _, p := range pollers {
		p.Stop()
	}
	// Clients in parallel, each bounded.
	errs := []error{inParallel(len(clients), func(i int) error { return clients[i].Close(ctx) })}
	if e.gateway != nil {
		if err := runtimes.RunBounded(ctx, runtimes.CloseTimeoutOf(e.gateway), "harness: close gateway "+e.target.Name(), e.gateway.Close); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, e.closeBackends(ctx))
	return errors.Join(errs...)
}

// closeBackends closes every started backend in parallel, bounded.
func (e *Env) closeBackends(ctx context.Context) error {
	return inParallel(len(e.backends), func(i int) error {
		if b := e.backends[i]; b != nil {
			return runtimes.RunBounded(ctx, runtimes.CloseTimeoutOf(b), "harness: close backend "+b.Name(), b.Close)
		}
		return nil
	})
}

// inParallel runs fn(0), ..., fn(n-1) at once and joins their errors.
func inParallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = fn(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
