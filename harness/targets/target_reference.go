package targets

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// Reference is the Target that runs our reference vMCP gateway in this
// process. Its configuration is rendered from ChaosVMCPTemplate (the same
// template the Exec target ships for `chaos vmcp`), so both paths agree.
type Reference struct {
	// TargetName names the target in results (default "reference").
	TargetName string
	// Caps overrides the declared capabilities (default
	// DefaultReferenceCapabilities).
	Caps Capabilities
	// Configure, when set, may change the parsed configuration before the
	// gateway is built (timeouts, aggregation, ...).
	Configure func(cfg *vmcp.Config)
	// Options are passed to vmcp.New as they are. Test-only "mutants" (a
	// gate that never opens, an observer, ...) go here, or in
	// OptionsFunc.
	Options []vmcp.Option
	// OptionsFunc, when set, returns more options for each gateway, after
	// Options; it sees the topology.
	OptionsFunc func(topo TopologyInfo) []vmcp.Option
}

// DefaultReferenceCapabilities is what the reference gateway offers: the
// session API, the health API, the circuit breaker, keepalive, Prometheus
// metrics and the optimizer (the last four when the topology's Features
// turn them on, which the config template renders), and it re-initializes
// a backend session on 404 (CapReinitOn404).
var DefaultReferenceCapabilities = Capabilities{CapSessionAPI, CapHealthAPI, CapBreaker, CapKeepalive, CapMetrics, CapOptimizer, CapReinitOn404}

// Name returns TargetName or "reference".
func (r Reference) Name() string {
	return cmp.Or(r.TargetName, "reference")
}

// Capabilities returns Caps or DefaultReferenceCapabilities.
func (r Reference) Capabilities() Capabilities {
	if r.Caps != nil {
		return r.Caps
	}
	return DefaultReferenceCapabilities
}

// Config renders the configuration the reference gateway would get for
// topo.
func (r Reference) Config(topo TopologyInfo) (*vmcp.Config, error) {
	text, err := RenderTemplate("chaos-vmcp.yaml.tmpl", ChaosVMCPTemplate, TemplateData{
		Backends: topo.Backends, Host: "127.0.0.1", Listen: "127.0.0.1:0", BaseURL: "http://127.0.0.1:0",
		ConfigPath: "(in memory)", CallTimeout: topo.GatewayCallTimeout().String(), Features: topo.Features,
	})
	if err != nil {
		return nil, err
	}
	cfg, err := vmcp.ParseConfig([]byte(text), "reference.yaml")
	if err != nil {
		return nil, err
	}
	if r.Configure != nil {
		r.Configure(cfg)
	}
	return cfg, nil
}

// Start builds and starts a reference gateway on 127.0.0.1 (a free port).
func (r Reference) Start(ctx context.Context, topo TopologyInfo) (Gateway, error) {
	cfg, err := r.Config(topo)
	if err != nil {
		return nil, fmt.Errorf("harness: reference target: %w", err)
	}
	opts := append([]vmcp.Option(nil), r.Options...)
	if r.OptionsFunc != nil {
		opts = append(opts, r.OptionsFunc(topo)...)
	}
	g, err := vmcp.New(cfg, opts...)
	if err != nil {
		return nil, fmt.Errorf("harness: reference target: %w", err)
	}
	ctx, cancel := runtimes.WithDefaultTimeout(ctx, runtimes.DefaultStartTimeout)
	defer cancel()
	if err := g.Start(ctx, "127.0.0.1:0"); err != nil {
		return nil, fmt.Errorf("harness: reference target: %w", err)
	}
	return &referenceGateway{g: g}, nil
}

// referenceGateway is a running reference gateway.
type referenceGateway struct {
	g *vmcp.Gateway
}

func (rg *referenceGateway) MCPURL() string { return rg.g.URL() }

func (rg *referenceGateway) BaseURL() string { return strings.TrimSuffix(rg.g.URL(), "/mcp") }

func (rg *referenceGateway) Close(ctx context.Context) error {
	return runtimes.RunBounded(ctx, runtimes.DefaultCloseTimeout, "harness: close reference gateway", rg.g.Shutdown)
}
