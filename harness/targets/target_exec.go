package targets

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Exec is a Target that runs any gateway binary. For each topology it picks
// a free 127.0.0.1 port, renders ConfigTemplate (a Go text/template given
// TemplateData) into a temporary file, expands the Command templates (so
// "{{.ConfigPath}}" and "{{.Listen}}" can be passed as arguments), starts
// the process in its own process group and polls ReadyURL until it answers.
//
// For our own gateway:
//
//	targets.Exec{
//		Command:        []string{chaosBin, "vmcp", "--config", "{{.ConfigPath}}", "--listen", "{{.Listen}}"},
//		ConfigTemplate: targets.ChaosVMCPTemplate,
//		ReadyURL:       "{{.BaseURL}}/status",
//	}
type Exec struct {
	// TargetName names the target in results (default "exec").
	TargetName string
	// Profile is the target profile file the target was built from ("":
	// none), recorded in results (Results.Profile).
	Profile string
	// Command is the argv; each element is a template.
	Command []string
	// ConfigTemplate is the config file template ("" writes no file).
	ConfigTemplate string
	// ConfigName is the rendered file's name (default "config.yaml").
	ConfigName string
	// Health and Session say where the health and session APIs are and
	// how to read them (zero: the reference's).
	Health, Session StateAPI
	// Metrics maps our metric names to the gateway's.
	Metrics map[string]string
	// ReadyTools: once ReadyURL answers, wait (within ReadyTimeout) until
	// tools/list through the gateway shows every backend's tools, found
	// by origin marker or else by ToolNames (a gateway whose ready URL
	// answers before its tools are indexed). With the optimizer on, until
	// tools/list lists any tool (the backends' hide behind find_tool).
	ReadyTools bool
	// MCPPath is the MCP endpoint's path (default "/mcp").
	MCPPath string
	// ReadyURL is a template of the URL polled for readiness (default
	// "{{.BaseURL}}" + MCPPath). The gateway is ready when a GET answers
	// with any status below 500.
	ReadyURL string
	// ReadyTimeout bounds the readiness wait (default 30 s; ctx may bound
	// it further).
	ReadyTimeout time.Duration
	// Caps are the capabilities the gateway offers.
	Caps Capabilities
	// Methods are the MCP method families it offers (nil: what it
	// advertises at initialize).
	Methods Methods
	// Transports are the backend transports it takes (nil: all).
	Transports Transports
	// ToolNames is how the gateway names a backend's tools and prompts
	// (a pattern of {backend} and {tool}; default DefaultToolNamePattern).
	ToolNames string
	// DistinctToolNames: fixture tools get backend-distinct bare names
	// under any ToolNames (Profile.DistinctToolNames).
	DistinctToolNames bool
	// Env is extra environment (KEY=value; each value a template).
	Env []string
	// Dir is the working directory ("" = the temporary directory).
	Dir string
	// Stderr, when set, receives a copy of the gateway's stdout and stderr.
	Stderr io.Writer
	// StopGrace is how long Close waits after SIGTERM before SIGKILL
	// (default 2 s).
	StopGrace time.Duration
	// Headers are added to the harness's requests to the gateway (a
	// profile's headers, rendered): secrets, never printed.
	Headers RequestHeaders
	// Recovery is how long the gateway may take to return to steady
	// state after a backend fault (0: DefaultRecovery; RecoveryOf).
	Recovery time.Duration
	// ProfileDir is the folder of the profile file the target was built
	// from ({{.ProfileDir}} in every template; "" without a profile).
	ProfileDir string
	// Image, when set, is a container image of this gateway: the container
	// runtime (harness/runtimes/containers) runs Command in it with the config
	// rendered into the container. Starting the Exec as a process ignores
	// it.
	Image string
}

// Name returns TargetName or "exec".
func (e Exec) Name() string {
	return cmp.Or(e.TargetName, "exec")
}

// Capabilities returns Caps.
func (e Exec) Capabilities() Capabilities { return e.Caps }

// AdminAPIs returns Health, Session and Metrics (AdminAPITarget).
func (e Exec) AdminAPIs() AdminAPIs {
	return AdminAPIs{Health: e.Health, Session: e.Session, Metrics: e.Metrics}
}

func (e Exec) mcpPath() string { return cmp.Or(e.MCPPath, "/mcp") }

// Start renders the config, starts the gateway and waits until it is
// ready. A gateway that exits at once because the port the harness picked
// for it was taken meanwhile (FreePort's port is free only a moment ago:
// another test's process or an outgoing connection may take it) is
// started again on another port, up to portAttempts times: the harness's
// choice of port is not the gateway's failure.
func (e Exec) Start(ctx context.Context, topo TopologyInfo) (Gateway, error) {
	for attempt := 1; ; attempt++ {
		g, err := e.startOnce(ctx, topo)
		var inUse *portInUseError
		if err == nil || attempt == portAttempts || !errors.As(err, &inUse) || ctx.Err() != nil {
			return g, err
		}
	}
}

// portAttempts is how many ports Start tries.
const portAttempts = 3

// portInUseError is a gateway that exited before it was ready saying its
// address was in use.
type portInUseError struct{ err error }

func (e *portInUseError) Error() string { return e.err.Error() }
func (e *portInUseError) Unwrap() error { return e.err }

// portInUse returns err as a *portInUseError when the gateway has exited
// saying its address was in use (its ready URL may even have answered:
// whoever took the port), else err.
func (g *execGateway) portInUse(err error) error {
	select {
	case <-g.exited:
		if strings.Contains(g.output.String(), "address already in use") {
			return &portInUseError{err}
		}
	default:
	}
	return err
}

// startOnce is Start on one port.
func (e Exec) startOnce(ctx context.Context, topo TopologyInfo) (Gateway, error) {
	if len(e.Command) == 0 {
		return nil, errors.New("harness: exec target: no command")
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("harness: exec target: pick a port: %w", err)
	}
	dir, err := runtimes.OwnedTempDir("harness-gateway-")
	if err != nil {
		return nil, fmt.Errorf("harness: exec target: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	listen := "127.0.0.1:" + strconv.Itoa(port)
	name := cmp.Or(e.ConfigName, "config.yaml")
	data := TemplateData{Backends: topo.Backends, Host: "127.0.0.1", Port: port, Listen: listen,
		BaseURL: "http://" + listen, ConfigPath: filepath.Join(dir, name), Dir: dir, ProfileDir: e.ProfileDir, CallTimeout: topo.GatewayCallTimeout().String(), Features: topo.Features}
	fail := func(err error) (Gateway, error) { return nil, fmt.Errorf("harness: exec target %s: %w", e.Name(), err) }
	if e.ConfigTemplate != "" {
		cfg, err := RenderTemplate("config", e.ConfigTemplate, data)
		if err == nil {
			err = os.WriteFile(data.ConfigPath, []byte(cfg), 0o600)
		}
		if err != nil {
			return fail(err)
		}
	}
	argv := make([]string, len(e.Command))
	for i, a := range e.Command {
		if argv[i], err = RenderTemplate(fmt.Sprintf("command[%d]", i), a, data); err != nil {
			return fail(err)
		}
	}
	env := os.Environ()
	for i, kv := range e.Env {
		v, err := RenderTemplate(fmt.Sprintf("env[%d]", i), kv, data)
		if err != nil {
			return fail(err)
		}
		env = append(env, v)
	}
	readyURL, err := RenderTemplate("readyURL", cmp.Or(e.ReadyURL, "{{.BaseURL}}"+e.mcpPath()), data)
	if err != nil {
		return fail(err)
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = cmp.Or(e.Dir, dir)
	cmd.SysProcAttr = runtimes.ChildProcAttr()
	g := &execGateway{target: e.Name(), cmd: cmd, dir: dir, base: data.BaseURL, mcp: data.BaseURL + e.mcpPath(),
		configPath: data.ConfigPath, output: runtimes.NewTailBuffer(64 << 10), exited: make(chan struct{}), grace: e.StopGrace}
	var out io.Writer = g.output
	if e.Stderr != nil {
		out = io.MultiWriter(g.output, e.Stderr)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("harness: exec target %s: start %q: %w", e.Name(), argv[0], err)
	}
	go func() {
		g.waitErr = cmd.Wait()
		close(g.exited)
	}()
	timeout := e.ReadyTimeout
	if timeout <= 0 {
		timeout = runtimes.DefaultStartTimeout
	}
	readyCtx, cancel := runtimes.WithDefaultTimeout(ctx, timeout)
	defer cancel()
	if err := g.waitReady(readyCtx, readyURL, e.Headers.Ready, timeout); err != nil {
		_ = g.Close(context.Background())
		return nil, err
	}
	if err := g.waitOwnListener(readyCtx, port); err != nil {
		_ = g.Close(context.Background())
		return nil, err
	}
	if e.ReadyTools {
		go func() { // a gateway that exits ends the wait
			select {
			case <-g.exited:
				cancel()
			case <-readyCtx.Done():
			}
		}()
		if err := waitTools(readyCtx, g.mcp, e.Headers.MCP, topo.Backends, e.ToolNames, topo.Features.Optimizer); err != nil {
			_ = g.Close(context.Background())
			return nil, g.portInUse(fmt.Errorf("harness: exec target %s: not ready within %v: %w%s", e.Name(), timeout, err, runtimes.QuoteTail(g.output.String())))
		}
	}
	ok = true
	return g, nil
}

// execGateway is a running Exec gateway.
type execGateway struct {
	target     string
	cmd        *exec.Cmd
	dir        string
	base, mcp  string
	configPath string
	output     *runtimes.TailBuffer
	exited     chan struct{}
	waitErr    error
	grace      time.Duration

	mu      sync.Mutex
	closing bool
}

// MCPURL is http://127.0.0.1:PORT + MCPPath.
func (g *execGateway) MCPURL() string { return g.mcp }

// BaseURL is http://127.0.0.1:PORT.
func (g *execGateway) BaseURL() string { return g.base }

// Output returns the tail of the gateway's stdout and stderr.
func (g *execGateway) Output() string { return g.output.String() }

// ConfigPath is the rendered config file.
func (g *execGateway) ConfigPath() string { return g.configPath }

// PID is the gateway process id.
func (g *execGateway) PID() int { return g.cmd.Process.Pid }

func (g *execGateway) waitReady(ctx context.Context, u string, header map[string]string, timeout time.Duration) error {
	ctx, cancel := runtimes.WithDefaultTimeout(ctx, timeout)
	defer cancel()
	if _, err := url.Parse(u); err != nil {
		return fmt.Errorf("harness: exec target %s: ready URL %q: %w", g.target, u, err)
	}
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	ready := HTTPReady(u, h, time.Second)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		last := ready(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-g.exited:
			return g.portInUse(fmt.Errorf("harness: exec target %s: gateway exited before it was ready (%v)%s", g.target, g.waitErr, runtimes.QuoteTail(g.output.String())))
		case <-ctx.Done():
			return fmt.Errorf("harness: exec target %s: not ready within %v (last: %v)%s", g.target, timeout, last, runtimes.QuoteTail(g.output.String()))
		case <-tick.C:
		}
	}
}

// HTTPReady returns a readiness check: a GET of u (with header) answers
// below HTTP 500 within timeout.
func HTTPReady(u string, header http.Header, timeout time.Duration) func(ctx context.Context) error {
	hc := &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		maps.Copy(req.Header, header)
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		if resp.StatusCode >= 500 {
			return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
		}
		return nil
	}
}

// Close sends SIGTERM to the process group, then SIGKILL after the grace
// period, and waits (bounded) for the process. It reports a gateway that
// had exited on its own before Close.
func (g *execGateway) Close(ctx context.Context) error {
	defer os.RemoveAll(g.dir)
	g.mu.Lock()
	already := g.closing
	g.closing = true
	g.mu.Unlock()
	select {
	case <-g.exited:
		if already {
			return nil
		}
		return fmt.Errorf("harness: gateway %s exited on its own (%v)%s", g.target, g.waitErr, runtimes.QuoteTail(g.output.String()))
	default:
	}
	ctx, cancel := runtimes.WithDefaultTimeout(ctx, runtimes.DefaultCloseTimeout)
	defer cancel()
	pid := g.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	grace := g.grace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-g.exited:
		// Reap whatever the gateway left in its group.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-g.exited:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("harness: gateway %s (pid %d) did not exit after SIGKILL: %w", g.target, pid, ctx.Err())
	}
}

// ExecGateway is what an Exec target's gateways offer beyond Gateway.
type ExecGateway interface {
	Gateway
	// PID is the gateway process id.
	PID() int
	// Output is the tail of the gateway's stdout and stderr.
	Output() string
	// ConfigPath is the rendered configuration file.
	ConfigPath() string
}

var _ ExecGateway = (*execGateway)(nil)
