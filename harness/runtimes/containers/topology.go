package containers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Topology is one topology's private network and the containers on it.
// Use it as the Runtime of the topology's backends and as its WrapTarget:
//
//	ct := containers.NewTopology()
//	harness.Topology{
//	    Backends:   []harness.BackendSpec{{Script: beta, Runtime: ct}},
//	    WrapTarget: ct.WrapTarget, // the gateway runs as a container too
//	}
//
// The network is created with the first container and removed with the
// last. A Topology serves one harness.Start.
type Topology struct {
	once sync.Once
	e    *Engine
	err  error
	net  netHolder

	mu sync.Mutex
	// inNetwork: the gateway runs on the network, so backends are given
	// to it by alias; otherwise by their published 127.0.0.1 ports.
	inNetwork bool
	// backendAuth: the gateway's config is ours to write (chaos vmcp in
	// the run's image), so backends require the run's MCP token and the
	// gateway is given it as their Authorization header.
	backendAuth bool
	// ctrs are the topology's started containers.
	ctrs []*ctr
	// pickPort, when set, picks the host ports to publish on (tests).
	pickPort func() (int, error)
}

// track adds a started container to the topology.
func (t *Topology) track(c *ctr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ctrs = append(t.ctrs, c)
}

// removeAll removes every container of the topology in parallel, each
// with one forced remove (then the network, after the last): a teardown
// costs one removal's time, not one per container.
func (t *Topology) removeAll(ctx context.Context) error {
	t.mu.Lock()
	cs := slices.Clone(t.ctrs)
	t.mu.Unlock()
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.remove(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// NewTopology returns a topology whose network is made on first use.
func NewTopology() *Topology { return &Topology{} }

// engine connects (Get) on first use.
func (t *Topology) engine(ctx context.Context) (*Engine, error) {
	t.once.Do(func() { t.e, t.err = Get(ctx) })
	return t.e, t.err
}

func (t *Topology) networkName() string {
	t.net.mu.Lock()
	defer t.net.mu.Unlock()
	if t.net.n == nil {
		return ""
	}
	return t.net.n.name
}

func (t *Topology) requiresBackendToken() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.backendAuth
}

func (t *Topology) gatewayInNetwork() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.inNetwork
}

// Name returns "container".
func (t *Topology) Name() string { return "container" }

// WrapTarget returns base as a gateway container on this topology's
// network (for harness.Topology.WrapTarget), after probing the engine:
// a *Gateway as it is; the reference gateway (targets.Reference without
// in-process options or Configure) and `chaos vmcp` (targets.Exec with the
// default command) as `chaos vmcp` in the run's image; an Exec with an
// Image as that image with its Command and config template. Any other
// target cannot run in a container: the error wraps *runtimes.SkipError.
func (t *Topology) WrapTarget(base targets.Target) (targets.Target, error) {
	g, err := GatewayFor(base)
	if err != nil {
		return nil, err
	}
	g.Topology = t
	t.mu.Lock()
	t.inNetwork = true
	t.backendAuth = g.Image == "" && g.ConfigTemplate != ""
	t.mu.Unlock()
	return g, nil
}

// GatewayFor returns the gateway container that runs base (see
// Topology.WrapTarget); its Topology is left unset.
func GatewayFor(base targets.Target) (*Gateway, error) {
	switch b := base.(type) {
	case *Gateway:
		g := *b
		return &g, nil
	case targets.Reference:
		if len(b.Options) > 0 || b.OptionsFunc != nil || b.Configure != nil {
			return nil, &runtimes.SkipError{Reason: fmt.Sprintf("target %s has in-process options (vmcp.Option or Configure) that cannot run in a container", b.Name())}
		}
		return &Gateway{TargetName: b.Name(), Caps: b.Capabilities(), ConfigTemplate: targets.ChaosVMCPTemplate}, nil
	case targets.Exec:
		if b.Image != "" {
			return &Gateway{TargetName: b.Name(), Caps: b.Capabilities(), Image: b.Image, Command: b.Command,
				ConfigTemplate: b.ConfigTemplate, ConfigName: b.ConfigName, MCPPath: b.MCPPath, Env: b.Env}, nil
		}
		if len(b.Command) >= 2 && b.Command[1] == "vmcp" && b.TargetName == "chaos-vmcp" {
			return &Gateway{TargetName: b.Name(), Caps: b.Capabilities(), ConfigTemplate: b.ConfigTemplate}, nil
		}
		return nil, &runtimes.SkipError{Reason: fmt.Sprintf("exec target %s names no gateway image (--gateway-image, $%s)", b.Name(), targets.GatewayImageEnv)}
	default:
		return nil, &runtimes.SkipError{Reason: fmt.Sprintf("target %s cannot run in a container (only the reference, chaos vmcp and targets with a gateway image can)", base.Name())}
	}
}
