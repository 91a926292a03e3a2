package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
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
	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// chaosBin is the chaos binary built once for these tests.
var chaosBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chaos-bin")
	if err != nil {
		panic(err)
	}
	chaosBin = filepath.Join(dir, "chaos")
	if prebuilt := os.Getenv(harness.ChaosBinEnv); prebuilt != "" {
		chaosBin = prebuilt // CI builds it once (.ci/run)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		out, err := exec.CommandContext(ctx, "go", "build", "-o", chaosBin, ".").CombinedOutput()
		cancel()
		if err != nil {
			os.Stderr.Write(out)
			panic("build chaos: " + err.Error())
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

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

func TestBackendBadScriptNamesFileAndLine(t *testing.T) {
	script := writeScript(t, "name: x\nfaults:\n  - kind: explode\n")
	out, err := exec.Command(chaosBin, "backend", "--script", script).CombinedOutput()
	if err == nil {
		t.Fatal("bad script accepted")
	}
	if !strings.Contains(string(out), "script.yaml:3") || !strings.Contains(string(out), "kind") {
		t.Fatalf("error output %q does not name file:line and field", out)
	}
}
