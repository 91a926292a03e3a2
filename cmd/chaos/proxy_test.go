package main

import (
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

// TestProxyCommand runs chaos proxy in front of a real mcp-go server: MCP
// passes through, the control API needs the token from the environment,
// and SIGTERM stops it cleanly with exit 130.
func TestProxyCommand(t *testing.T) {
	b, err := proxytest.Start("alpha", proxytest.StreamableHTTP)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cmd := exec.Command(chaosBin, "proxy", "--upstream", b.URL, "--admin", "0.0.0.0:0")
	cmd.Env = append(cmd.Environ(), "CHAOS_ADMIN_TOKEN=tok")
	var ready ProxyReadyLine
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	readReady(t, stdout, &ready)
	if !strings.HasSuffix(ready.URL, "/mcp") || ready.LeaseTTL != "30s" {
		t.Fatalf("ready line %+v", ready)
	}
	c := mcpClient(t, ready.URL)
	if res, err := callTool(c, "echo"); err != nil || res.IsError {
		t.Fatalf("echo through chaos proxy: %+v %v", res, err)
	}
	admin := strings.Replace(ready.Admin, "0.0.0.0", "127.0.0.1", 1)
	resp, err := http.Get(admin + "/faults")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("control API without the token: %d, want 401", resp.StatusCode)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCodeOf(err); code != 130 {
			t.Fatalf("chaos proxy after SIGTERM: exit %d (%v), want 130 (interrupted)", code, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("chaos proxy did not stop within 10s of SIGTERM")
	}
	out, err := exec.Command(chaosBin, "proxy", "--upstream", b.URL, "--admin", "0.0.0.0:0").CombinedOutput()
	if code := exitCodeOf(err); code != 2 || !strings.Contains(string(out), "admin token") {
		t.Fatalf("non-loopback admin without a token: exit %d %s", code, out)
	}
}

func exitCodeOf(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
