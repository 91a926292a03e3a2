package targets_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// standInTemplate makes `chaos backend` a stand-in "gateway": its script
// has one tool per backend of the topology.
const standInTemplate = `name: standin
transport: streamable-http
tools:
{{- range .Backends}}
  - name: {{.Name}}_echo
    result: {text: {{quote .URL}}}
{{- end}}
`

func standIn(t *testing.T) targets.Exec {
	return targets.Exec{
		TargetName:     "standin",
		Command:        []string{chaosBin(t), "backend", "--script", "{{.ConfigPath}}", "--listen", "{{.Listen}}"},
		ConfigTemplate: standInTemplate,
		Caps:           targets.Capabilities{targets.CapMetrics},
		ReadyTimeout:   20 * time.Second,
	}
}

func TestExecTargetStandIn(t *testing.T) {
	t.Parallel()
	env := startEnv(t, harness.Topology{Target: standIn(t), Backends: twoBackends(nil)})
	if env.Target().Name() != "standin" || !env.Capabilities().Has(targets.CapMetrics) {
		t.Fatalf("target %s caps %v", env.Target().Name(), env.Capabilities())
	}
	g := env.Gateway()
	if !strings.HasPrefix(g.MCPURL(), "http://127.0.0.1:") || !strings.HasSuffix(g.MCPURL(), "/mcp") {
		t.Fatalf("MCPURL %s", g.MCPURL())
	}
	ctx := ctxT(t, 20*time.Second)
	c, err := env.Client(ctx, history.RevisionLegacy)
	if err != nil {
		t.Fatal(err)
	}
	names, err := c.ToolNames(ctx)
	slices.Sort(names)
	if err != nil || !slices.Equal(names, []string{"alpha_echo", "beta_echo"}) {
		t.Fatalf("tools %v %v", names, err)
	}
	call := c.CallTool(ctx, "beta_echo", nil)
	if call.Outcome != history.OutcomeOK || call.Text() != env.Backend("beta").URL() {
		t.Fatalf("call: %+v %v", call.CallRecord, call.Err)
	}
	pid := g.(targets.ExecGateway).PID()
	if err := g.Close(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("gateway process %d still exists", pid)
	}
}

func TestExecTargetErrors(t *testing.T) {
	t.Parallel()
	// The gateway exits at once: the error quotes its stderr.
	e := standIn(t) // builds the chaos binary (if need be) before the deadline starts
	ctx := ctxT(t, 30*time.Second)
	e.ConfigTemplate = "name: [unclosed\n"
	_, err := e.Start(ctx, targets.TopologyInfo{})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "stderr") {
		t.Fatalf("bad config: %v", err)
	}
	// A template error names the template.
	e = standIn(t)
	e.ConfigTemplate = "{{.Nope}}"
	if _, err := e.Start(ctx, targets.TopologyInfo{}); err == nil || !strings.Contains(err.Error(), "config") {
		t.Fatalf("template error: %v", err)
	}
	// A gateway that never gets ready is killed at the deadline.
	e = targets.Exec{Command: []string{"sleep", "30"}, ReadyTimeout: 300 * time.Millisecond}
	start := time.Now()
	if _, err := e.Start(ctx, targets.TopologyInfo{}); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("never ready: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second { // not the 30 s of sleep
		t.Fatalf("readiness failure took %v", d)
	}
}

// TestExecCloseIgnoresSIGTERM: a gateway that ignores SIGTERM is killed
// after the grace period.
func TestExecCloseIgnoresSIGTERM(t *testing.T) {
	t.Parallel()
	bin := chaosBin(t)
	ctx := ctxT(t, 30*time.Second)
	e := targets.Exec{
		Command:        []string{"sh", "-c", `trap "" TERM; exec ` + bin + ` backend --script "$0" --listen "$1"`, "{{.ConfigPath}}", "{{.Listen}}"},
		ConfigTemplate: standInTemplate, StopGrace: 200 * time.Millisecond,
	}
	g, err := e.Start(ctx, targets.TopologyInfo{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := g.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Close took %v", d)
	}
}

func TestChaosVMCPTemplateParses(t *testing.T) {
	t.Parallel()
	topo := targets.TopologyInfo{CallTimeout: 3 * time.Second, Backends: []runtimes.BackendInfo{
		{Name: "alpha", URL: "http://127.0.0.1:9101/mcp", Transport: "streamable-http", Protocol: "legacy"},
		{Name: "beta", URL: "http://127.0.0.1:9102/sse", Transport: "sse"},
		{Name: "gamma", Transport: "stdio", Command: []string{"/bin/chaos", "backend", "--stdio", "--script", "/tmp/g \"q\".yaml"}},
	}}
	cfg, err := targets.Reference{Configure: func(c *vmcp.Config) { c.Name = "tweaked" }}.Config(topo)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "tweaked" || len(cfg.Backends) != 3 || cfg.Timeouts.Call != 3*time.Second {
		t.Fatalf("config: %+v", cfg)
	}
	if g, _ := cfg.Backend("gamma"); !slices.Equal(g.Command, topo.Backends[2].Command) {
		t.Fatalf("gamma command %q", g.Command)
	}
	if cfg.Limits.MaxSessions != config.DefaultMaxSessions {
		t.Fatalf("limits.maxSessions %d without the feature, want the default %d", cfg.Limits.MaxSessions, config.DefaultMaxSessions)
	}
	topo.Features.MaxSessions = 6100
	if cfg, err = (targets.Reference{}).Config(topo); err != nil || cfg.Limits.MaxSessions != 6100 {
		t.Fatalf("Features.MaxSessions 6100: limits.maxSessions %d, err %v", cfg.Limits.MaxSessions, err)
	}
}

// TestExecChaosVMCP runs our gateway (`chaos vmcp`) through the shipped
// template.
func TestExecChaosVMCP(t *testing.T) {
	t.Parallel()
	bin := chaosBin(t)
	env := startEnv(t, harness.Topology{Target: targets.Exec{
		TargetName:     "chaos-vmcp",
		Command:        []string{bin, "vmcp", "--config", "{{.ConfigPath}}", "--listen", "{{.Listen}}"},
		ConfigTemplate: targets.ChaosVMCPTemplate,
		ReadyURL:       "{{.BaseURL}}/status",
		Caps:           targets.Capabilities{targets.CapSessionAPI},
	}, Backends: twoBackends(nil)})
	ctx := ctxT(t, 20*time.Second)
	c, err := env.Client(ctx, history.RevisionLegacy)
	if err != nil {
		t.Fatal(err)
	}
	if err := env.SetFaults(ctx, "beta", http403); err != nil {
		t.Fatal(err)
	}
	if call := c.CallTool(ctx, "beta_echo", map[string]any{"msg": "x"}); call.Outcome != history.OutcomeBackendUnavailable || call.Backend != "beta" {
		t.Fatalf("call: %+v %v", call.CallRecord, call.Err)
	}
	if call := c.CallTool(ctx, "alpha_echo", map[string]any{"msg": "x"}); call.Outcome != history.OutcomeOK {
		t.Fatalf("call: %+v %v", call.CallRecord, call.Err)
	}
}

// TestExecTargetRetriesATakenPort: a gateway that exits saying its
// address is in use (the port the harness picked was taken meanwhile) is
// started again on another port, at most 3 times in all; any other exit
// is not retried.
func TestExecTargetRetriesATakenPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		failures int    // starts that fail before one succeeds
		says     string // what a failed start prints
		tries    string // starts wanted
		ok       bool
	}{
		{"taken once", 1, "address already in use", "2", true},
		{"always taken", 9, "address already in use", "3", false},
		{"another exit", 1, "no such file", "1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := standIn(t)
			tries := filepath.Join(t.TempDir(), "tries")
			script := fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s
if [ $n -le %[2]d ]; then echo "listen tcp $1: bind: %[3]s" >&2; exit 1; fi
shift; exec "$@"`, tries, tc.failures, tc.says)
			e.Command = append([]string{"sh", "-c", script, "sh", "{{.Listen}}"}, e.Command...)
			g, err := e.Start(ctxT(t, 60*time.Second), targets.TopologyInfo{Backends: []runtimes.BackendInfo{{Name: "alpha", URL: "http://127.0.0.1:1/mcp", Transport: "streamable-http"}}})
			if g != nil {
				defer g.Close(ctxT(t, 10*time.Second))
			}
			got, _ := os.ReadFile(tries)
			if strings.TrimSpace(string(got)) != tc.tries || (err == nil) != tc.ok {
				t.Fatalf("%s starts, error %v; want %s starts, ok %v", strings.TrimSpace(string(got)), err, tc.tries, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %v does not quote the gateway's %q", err, tc.says)
			}
		})
	}
}

// TestExecTargetSeesAnImpostor: the port picked for the gateway is taken,
// before the gateway binds it, by another program that answers the ready
// URL; the gateway then fails to bind it, but only after a while (a
// loaded machine). The harness must not take the other program's answer
// for the gateway's: it waits for the gateway to exit "address already in
// use" and starts it on another port.
func TestExecTargetSeesAnImpostor(t *testing.T) {
	t.Parallel()
	// First start: the impostor listens, then the gateway, a second
	// later, tries the port.
	g, starts, port, err := startBesideImpostor(t, `sleep 1`)
	if err != nil || starts != "2" {
		t.Fatalf("%s starts, error %v; want 2 starts (the impostor's port, then another), ok", starts, err)
	}
	if strings.Contains(g.MCPURL(), fmt.Sprintf(":%d/", port)) {
		t.Fatalf("the gateway's URL %s is the impostor's port %d", g.MCPURL(), port)
	}
}

// TestExecTargetImpostorGone: another program takes the gateway's port,
// answers the ready URL and closes; the gateway, which failed to bind the
// port meanwhile, exits "address already in use" a little later. Nothing
// listening on the port is no proof the answer was the gateway's: the
// harness waits, sees it exit, and starts it on another port (.ci/load,
// 2026-12-03: a stand-in gateway was taken as ready on a port nobody
// listened on, and its client got "connection refused").
func TestExecTargetImpostorGone(t *testing.T) {
	t.Parallel()
	// First start: the impostor is killed 300 ms after it listens, and
	// the "gateway" says its bind failed and exits 600 ms after that.
	g, starts, _, err := startBesideImpostor(t, `sleep 0.3; kill -9 $imp
  sleep 0.6; echo "listen tcp $1: bind: address already in use" >&2; exit 1`)
	if err != nil || starts != "2" {
		t.Fatalf("%s starts, error %v; want 2 starts (the impostor's port, then another), ok", starts, err)
	}
	if err := targets.HTTPReady(g.MCPURL(), nil, 2*time.Second)(ctxT(t, 5*time.Second)); err != nil {
		t.Errorf("the gateway taken as ready does not answer: %v", err)
	}
}

// startBesideImpostor starts the stand-in gateway; on its first start an
// impostor (a fake backend in a session of its own, $imp) first listens
// on the gateway's port, then the shell runs then (in the script, $1 is
// the listen address) before the gateway itself. It returns the
// gateway (closed at the end of the test), how many starts there were,
// the impostor's port and Start's error.
func startBesideImpostor(t *testing.T, then string) (targets.Gateway, string, int, error) {
	e := standIn(t)
	dir := t.TempDir()
	tries, impostor := filepath.Join(dir, "tries"), filepath.Join(dir, "impostor")
	t.Cleanup(func() {
		if b, err := os.ReadFile(impostor); err == nil {
			var pid, port int
			if _, err := fmt.Sscan(string(b), &pid, &port); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	script := fmt.Sprintf(`n=$(cat %[1]s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]s
if [ $n -eq 1 ]; then
  port=${1##*:}
  setsid "$2" backend --script "$5" --listen "$1" >/dev/null 2>&1 &
  imp=$!; echo "$imp $port" > %[2]s
  hex=$(printf ':%%04X ' "$port")
  i=0; until grep -q "$hex.* 0A " /proc/net/tcp || [ $i -ge 200 ]; do sleep 0.05; i=$((i+1)); done
  %[3]s
fi
shift; exec "$@"`, tries, impostor, then)
	e.Command = append([]string{"sh", "-c", script, "sh", "{{.Listen}}"}, e.Command...)
	g, err := e.Start(ctxT(t, 60*time.Second), targets.TopologyInfo{Backends: []runtimes.BackendInfo{{Name: "alpha", URL: "http://127.0.0.1:1/mcp", Transport: "streamable-http"}}})
	if g != nil {
		t.Cleanup(func() { _ = g.Close(ctxT(t, 10*time.Second)) })
	}
	got, _ := os.ReadFile(tries)
	b, _ := os.ReadFile(impostor)
	var pid, port int
	if _, err := fmt.Sscan(string(b), &pid, &port); err != nil {
		t.Fatalf("no impostor started (%q): %v", b, err)
	}
	return g, strings.TrimSpace(string(got)), port, err
}
