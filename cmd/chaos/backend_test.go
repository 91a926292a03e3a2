package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testpar"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// chaosBin is the chaos binary built once for these tests.
var chaosBin string

// TestMain builds chaos for the tests. Most of them run chaos as child
// processes. Those that own everything they start (their processes,
// temporary directories, ports, and Docker resources labelled with their
// run's pid) and take longest call t.Parallel, so they overlap
// (-test.parallel defaults to parallelTests: they mostly wait on their
// child's deadlines, not on the CPU), those that drive the Docker engine
// one at a time (takeDockerTurn); those that set environment
// variables (t.Setenv), sweep what other runs left (chaos clean, the
// orphan sweep) or time a lease to the second stay serial, and run before
// the parallel ones.
func TestMain(m *testing.M) {
	testpar.Default(parallelTests())
	// $CHAOS_BIN when CI built it once, else built into a directory named
	// for this process (swept by the next run if this one is killed).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	bin, err := runtimes.BuildChaos(ctx)
	cancel()
	if err != nil {
		panic("build chaos: " + err.Error())
	}
	chaosBin = bin
	code := m.Run()
	os.Exit(code)
}

// parallelTests is the default -test.parallel: two chaos runs per core
// (each runs its own scenarios side by side, runner.DefaultParallel).
func parallelTests() int { return 2 * runner.DefaultParallel() }

func writeScript(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// spawn starts `chaos backend` and waits for its ready line.
func spawn(t *testing.T, args ...string) (*exec.Cmd, fakebackends.ReadyLine) {
	t.Helper()
	cmd := exec.Command(chaosBin, append([]string{"backend"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatal("chaos backend exited before its ready line")
		}
		var ready fakebackends.ReadyLine
		if err := json.Unmarshal([]byte(line), &ready); err != nil {
			t.Fatalf("ready line %q: %v", line, err)
		}
		return cmd, ready
	case <-time.After(20 * time.Second):
		t.Fatal("no ready line within 20s")
	}
	return nil, fakebackends.ReadyLine{}
}

func mcpClient(t *testing.T, url string) *client.Client {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithHTTPBasicClient(&http.Client{Timeout: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { go c.Close() })
	return c
}

func callTool(c *client.Client, name string) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: map[string]any{"msg": "hi"}}})
}

const processScript = `name: proc
protocol: legacy
tools:
  - {name: echo, description: Echo}
  - {name: die, description: Exits the process}
faults:
  - {kind: crash, exit: true, exitCode: 3, match: {tool: die}}
`

func TestBackendProcessServesAndExitsOnFault(t *testing.T) {
	cmd, ready := spawn(t, "--script", writeScript(t, processScript))
	if ready.Name != "proc" || !strings.HasSuffix(ready.URL, "/mcp") || ready.Admin == "" || ready.PID != cmd.Process.Pid {
		t.Fatalf("ready line %+v", ready)
	}
	c := mcpClient(t, ready.URL)
	if res, err := callTool(c, "echo"); err != nil || res.IsError {
		t.Fatalf("echo: %v", err)
	}
	if _, err := callTool(c, "die"); err == nil {
		t.Fatal("call to a tool whose fault exits the process succeeded")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("process ended with %v; want exit code 3", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("process did not exit")
	}
}

func TestBackendProcessSIGKILLIsACrash(t *testing.T) {
	cmd, ready := spawn(t, "--script", writeScript(t, processScript))
	c := mcpClient(t, ready.URL)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	start := time.Now()
	_, err := callTool(c, "echo")
	if err == nil || time.Since(start) > time.Second {
		t.Fatalf("call to a killed backend: %v after %s", err, time.Since(start))
	}
}

func TestBackendStdioProcess(t *testing.T) {
	script := writeScript(t, "name: s\ntransport: stdio\ntools:\n  - {name: echo}\n")
	tr := transport.NewStdio(chaosBin, nil, "backend", "--script", script)
	c := client.NewClient(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{ProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION}}); err != nil {
		t.Fatal(err)
	}
	res, err := callTool(c, "echo")
	if err != nil || res.IsError {
		t.Fatalf("echo over stdio process: %v", err)
	}
}

// runChaos runs chaos to completion with a deadline and returns its
// combined output.
func runChaos(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaosBin, args...)
	cmd.WaitDelay = 2 * time.Second // pipes closed even if a child holds them
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("chaos %v did not end within 20s: %s", args, out)
	}
	return out, err
}

func TestBackendBadScriptNamesFileAndLine(t *testing.T) {
	script := writeScript(t, "name: x\nfaults:\n  - kind: explode\n")
	out, err := runChaos(t, "backend", "--script", script)
	if err == nil {
		t.Fatal("bad script accepted")
	}
	if !strings.Contains(string(out), "script.yaml:3") || !strings.Contains(string(out), "kind") {
		t.Fatalf("error output %q does not name file:line and field", out)
	}
}

func TestBackendFlagsOverrideListenAndAdmin(t *testing.T) {
	// Free ports picked by the kernel, released for the backend to take.
	free := func() string {
		var lc net.ListenConfig
		ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	listen, admin := free(), free()
	script := writeScript(t, processScript+"listen: 127.0.0.1:1\nadmin: 127.0.0.1:2\n")
	_, ready := spawn(t, "--script", script, "--listen", listen, "--admin", admin)
	if ready.URL != "http://"+listen+"/mcp" || ready.Admin != "http://"+admin {
		t.Fatalf("ready line %+v; want MCP on %s and the control API on %s", ready, listen, admin)
	}
	c := mcpClient(t, ready.URL)
	if res, err := callTool(c, "echo"); err != nil || res.IsError {
		t.Fatalf("echo on the --listen address: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ready.Admin+"/faults", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("control API on the --admin address: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /faults on the --admin address: %d", resp.StatusCode)
	}
}

func TestBackendFlagsAreValidated(t *testing.T) {
	script := writeScript(t, processScript)
	out, err := runChaos(t, "backend", "--script", script, "--transport", "sse", "--protocol", "modern")
	if err == nil {
		t.Fatal("--transport sse --protocol modern accepted")
	}
	if !strings.Contains(string(out), "protocol") || !strings.Contains(string(out), "sse") {
		t.Fatalf("error output %q does not name the protocol and the transport", out)
	}
}

// TestBackendAdminTokenFromFile: the control API's token can come from a
// file, so it is not in /proc/PID/cmdline; with both the flag and the file
// the command is a usage error.
func TestBackendAdminTokenFromFile(t *testing.T) {
	const tok = "file-token-7f3a"
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, ready := spawn(t, "--script", writeScript(t, processScript), "--admin", "127.0.0.1:0", "--admin-token-file", tokFile)
	status := func(auth string) int {
		req, _ := http.NewRequest(http.MethodGet, ready.Admin+"/faults", nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(""); got != http.StatusUnauthorized {
		t.Fatalf("no token: HTTP %d, want 401", got)
	}
	if got := status(tok); got != http.StatusOK {
		t.Fatalf("token from the file: HTTP %d, want 200", got)
	}
	if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)); err == nil && strings.Contains(string(cmdline), tok) {
		t.Fatalf("the token is in /proc/PID/cmdline: %q", cmdline)
	}

	both := exec.Command(chaosBin, "backend", "--script", writeScript(t, processScript), "--admin-token", "x", "--admin-token-file", tokFile)
	out, err := both.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not both") {
		t.Fatalf("--admin-token with --admin-token-file: %v, %s; want exit 2 saying not both", err, out)
	}
	help, _ := exec.Command(chaosBin, "backend", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--admin-token-file") || !strings.Contains(string(help), "CHAOS_ADMIN_TOKEN") {
		t.Fatalf("--help does not document the token file and variable:\n%s", help)
	}
}

// TestBackendBadScriptExitsTwo: a script that does not decode is a
// configuration error (exit 2) named by file:line: field, not a failure.
func TestBackendBadScriptExitsTwo(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nbogus: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runChaos(t, "backend", "--script", bad)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), bad+":2: bogus") {
		t.Fatalf("bad script: %v, %s; want exit 2 naming %s:2: bogus", err, out, bad)
	}
}
