package containers

import (
	"context"
	"fmt"
	"net/http"

	"go.yaml.in/yaml/v3"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Ports inside a backend container.
const (
	BackendMCPPort   = 8080
	BackendAdminPort = 8081
)

// Start runs script as `chaos backend` in a container on the topology's
// network, aliased by the script's name, and returns once its control API
// answers. Stdio scripts are not supported (the gateway spawns those).
func (t *Topology) Start(ctx context.Context, script *fakebackends.Script) (runtimes.RunningBackend, error) {
	if script == nil {
		return nil, fmt.Errorf("containers: nil script")
	}
	s := *script
	if s.Transport == fakebackends.TransportStdio {
		return nil, fmt.Errorf("containers: backend %q: stdio backends are spawned by the gateway: %w", s.Name, runtimes.ErrNotSupported)
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	e, err := t.engine(ctx)
	if err != nil {
		return nil, err
	}
	img, err := e.Image(ctx)
	if err != nil {
		return nil, err
	}
	s.ApplyDefaults()
	s.Listen, s.Admin = "", ""
	data, err := yaml.Marshal(&s)
	if err != nil {
		return nil, fmt.Errorf("containers: backend %q: encode script: %w", s.Name, err)
	}
	cmd := []string{"backend", "--script", "/etc/chaos/script.yaml",
		"--listen", fmt.Sprintf("0.0.0.0:%d", BackendMCPPort), "--admin", fmt.Sprintf("0.0.0.0:%d", BackendAdminPort)}
	env := map[string]string{"CHAOS_ADMIN_TOKEN": e.token}
	if t.requiresBackendToken() {
		env["VMCP_CHAOS_TOKEN"] = e.mcpToken
	} else {
		// The gateway's config is not ours to write (see backendauth.go).
		cmd = append(cmd, "--allow-network")
	}
	c, err := t.runContainer(ctx, spec{
		alias: s.Name, image: img, cmd: cmd, env: env,
		files:     []file{{path: "/etc/chaos/script.yaml", data: string(data)}},
		ports:     []int{BackendMCPPort, BackendAdminPort},
		readyPort: BackendAdminPort, readyPath: "/healthz", readyHeader: http.Header{"Authorization": {"Bearer " + e.token}},
	})
	if err != nil {
		return nil, err
	}
	admin := fmt.Sprintf("http://127.0.0.1:%d", c.ports[BackendAdminPort])
	return &Backend{ctr: c, AdminAPI: runtimes.NewAdminAPI(admin, e.token).Named(c.wrap), script: s, adminURL: admin}, nil
}

// Backend is a fake backend in a container: a runtimes.RunningBackend (its
// control methods are the control API's), a runtimes.Respawner (kill and
// start the same container) and a Faulter.
type Backend struct {
	*ctr
	*runtimes.AdminAPI
	script   fakebackends.Script
	adminURL string
}

var (
	_ runtimes.RunningBackend = (*Backend)(nil)
	_ runtimes.Respawner      = (*Backend)(nil)
	_ Faulter                 = (*Backend)(nil)
)

func (b *Backend) path() string {
	if b.script.Transport == fakebackends.TransportSSE {
		return "/sse"
	}
	return "/mcp"
}

// Name is the script's name (and the container's alias).
func (b *Backend) Name() string { return b.script.Name }

// URL is the MCP endpoint as the gateway reaches it: by alias on the
// topology's network when the gateway runs there, else the published
// 127.0.0.1 port.
func (b *Backend) URL() string {
	if b.t.gatewayInNetwork() {
		return b.NetworkURL()
	}
	return b.HostURL()
}

// NetworkURL is http://<alias>:8080/<path>.
func (b *Backend) NetworkURL() string {
	return fmt.Sprintf("http://%s:%d%s", b.alias, BackendMCPPort, b.path())
}

// HostURL is the MCP endpoint on its published 127.0.0.1 port.
func (b *Backend) HostURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", b.ports[BackendMCPPort], b.path())
}

// AdminURL is the control API on its published 127.0.0.1 port.
func (b *Backend) AdminURL() string { return b.adminURL }

// Transport is the script's transport.
func (b *Backend) Transport() fakebackends.Transport { return b.script.Transport }

// Info describes the backend to the gateway's config template.
func (b *Backend) Info() runtimes.BackendInfo {
	return runtimes.BackendInfo{Name: b.script.Name, URL: b.URL(), AdminURL: b.adminURL,
		Transport: string(b.script.Transport), Protocol: string(b.script.Protocol)}
}

// Restart restarts the MCP server behind the same listener (control API).
func (b *Backend) Restart(ctx context.Context) error { return b.AdminAPI.Restart(ctx) }

// Respawn kills the container if it runs and starts it again: a fresh
// process from the script, same alias and ports (faults set over the
// control API are gone).
func (b *Backend) Respawn(ctx context.Context) error {
	if st, err := b.state(ctx); err == nil && st.Running {
		if st.Paused {
			_ = b.ctr.Resume(ctx)
		}
		if err := b.ctr.Kill(ctx); err != nil {
			return err
		}
	}
	return b.StartAgain(ctx)
}

// Close removes the container (and the network after its last one).
func (b *Backend) Close(ctx context.Context) error { return b.remove(ctx) }
