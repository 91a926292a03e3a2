package containers

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// GatewayPort is the port a gateway container listens on.
const GatewayPort = 8080

// Gateway is a targets.Target that runs a gateway as a container on a
// Topology's network, in front of the topology's backends (given to it by
// alias). The default is our `chaos vmcp` in the run's image; set Image,
// Command and ConfigTemplate for any other gateway image.
type Gateway struct {
	// Topology is the network the gateway joins (WrapTarget sets it).
	Topology *Topology
	// TargetName names the target (default "container").
	TargetName string
	// Caps are the capabilities the gateway offers.
	Caps targets.Capabilities
	// Image is the gateway's image; "" is the run's chaos image.
	Image string
	// Command is the container's command (each element a template, data
	// targets.TemplateData with Host 0.0.0.0, Port GatewayPort and
	// ConfigPath the rendered file in the container). Default, for the
	// chaos image: vmcp --config {{.ConfigPath}} --listen {{.Listen}}.
	Command []string
	// ConfigTemplate is rendered into /etc/vmcp/<ConfigName> in the
	// container ("" writes no file).
	ConfigTemplate string
	// ConfigName is the file's name (default config.yaml).
	ConfigName string
	// MCPPath is the MCP endpoint's path (default /mcp).
	MCPPath string
	// ReadyPath is polled on the published port until it answers below
	// 500 (default /status for the chaos image, else MCPPath).
	ReadyPath string
	// Env is extra environment (KEY=value, each value a template).
	Env []string
}

// Name returns TargetName or "container".
func (g *Gateway) Name() string {
	return cmp.Or(g.TargetName, "container")
}

// Capabilities returns Caps.
func (g *Gateway) Capabilities() targets.Capabilities { return g.Caps }

// Start renders the config, runs the gateway container with the alias
// "gateway" and waits until ReadyPath answers.
func (g *Gateway) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	if g.Topology == nil {
		return nil, fmt.Errorf("containers: gateway %s: no Topology (use Topology.WrapTarget)", g.Name())
	}
	t := g.Topology
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	e, err := t.engine(ctx)
	if err != nil {
		return nil, err
	}
	img, cmd, ready := g.Image, g.Command, g.ReadyPath
	mcpPath := cmp.Or(g.MCPPath, "/mcp")
	if img == "" {
		if img, err = e.Image(ctx); err != nil {
			return nil, err
		}
		if len(cmd) == 0 {
			cmd = []string{"vmcp", "--config", "{{.ConfigPath}}", "--listen", "{{.Listen}}"}
		}
		ready = cmp.Or(ready, "/status")
	}
	ready = cmp.Or(ready, mcpPath)
	name := cmp.Or(g.ConfigName, "config.yaml")
	listen := fmt.Sprintf("0.0.0.0:%d", GatewayPort)
	data := targets.TemplateData{
		Backends: topo.Backends, Host: "0.0.0.0", Port: GatewayPort, Listen: listen,
		BaseURL: "http://" + listen, ConfigPath: path.Join("/etc/vmcp", name), Dir: "/etc/vmcp",
		CallTimeout: topo.GatewayCallTimeout().String(), Features: topo.Features,
	}
	var files []file
	if g.ConfigTemplate != "" {
		text, err := targets.RenderTemplate(name, g.ConfigTemplate, data)
		if err != nil {
			return nil, fmt.Errorf("containers: gateway %s: %w", g.Name(), err)
		}
		if g.Image == "" {
			// chaos vmcp refuses an anonymous gateway off loopback unless
			// told: here it listens on the topology's private network, and
			// its port is published on 127.0.0.1 only.
			text = strings.Replace(text, "incomingAuth: {type: anonymous}", "incomingAuth: {type: anonymous, allowNetwork: true}", 1)
			if text, err = t.withBackendToken(text, e.mcpToken); err != nil {
				return nil, fmt.Errorf("containers: gateway %s: %w", g.Name(), err)
			}
		}
		files = append(files, file{path: data.ConfigPath, data: text})
	}
	argv := make([]string, len(cmd))
	for i, a := range cmd {
		if argv[i], err = targets.RenderTemplate(fmt.Sprintf("command[%d]", i), a, data); err != nil {
			return nil, fmt.Errorf("containers: gateway %s: %w", g.Name(), err)
		}
	}
	env := map[string]string{}
	for i, kv := range g.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("containers: gateway %s: env[%d] %q is not KEY=value", g.Name(), i, kv)
		}
		if env[k], err = targets.RenderTemplate(fmt.Sprintf("env[%d]", i), v, data); err != nil {
			return nil, fmt.Errorf("containers: gateway %s: %w", g.Name(), err)
		}
	}
	c, err := t.runContainer(ctx, spec{
		alias: "gateway", image: img, cmd: argv, env: env, files: files, ports: []int{GatewayPort},
		readyPort: GatewayPort, readyPath: ready,
	})
	if err != nil {
		return nil, fmt.Errorf("containers: gateway %s: %w", g.Name(), err)
	}
	return &RunningGateway{ctr: c, mcpPath: mcpPath}, nil
}

// RunningGateway is a gateway container: a targets.Gateway and a Faulter,
// plus Restart (stop gracefully, start again and wait until it is ready,
// bounded by ctx, default StartTimeout). Its published port is fixed, so
// its URLs survive a restart.
type RunningGateway struct {
	*ctr
	mcpPath string
}

var (
	_ targets.Gateway = (*RunningGateway)(nil)
	_ Faulter         = (*RunningGateway)(nil)
)

// BaseURL is http://127.0.0.1:<published port>.
func (rg *RunningGateway) BaseURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d", rg.ports[GatewayPort])
}

// MCPURL is BaseURL plus the MCP path.
func (rg *RunningGateway) MCPURL() string { return rg.BaseURL() + rg.mcpPath }

// Close removes the gateway's container and, in parallel, the backend
// containers of its topology (and then the network): it is the teardown
// of the topology (harness.Env closes the gateway first, then the
// backends, whose Close then has nothing left to do). Bounded by ctx and
// RemoveTimeout.
func (rg *RunningGateway) Close(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, RemoveTimeout)
	defer cancel()
	return rg.t.removeAll(ctx)
}
