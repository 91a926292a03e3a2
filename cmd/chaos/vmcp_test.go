package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestVMCPCommandServesAggregatedBackends runs chaos vmcp in front of a
// chaos backend process and calls a prefixed tool through it.
func TestVMCPCommandServesAggregatedBackends(t *testing.T) {
	_, backend := spawn(t, "--script", writeScript(t, processScript))
	cfg := writeScript(t, fmt.Sprintf("name: demo\nbackends:\n  - {name: alpha, url: %q}\ntimeouts: {call: 2s}\n", backend.URL))
	prof := t.TempDir() + "/gw.prof"
	cmd := exec.Command(chaosBin, "vmcp", "--config", cfg, "--listen", "127.0.0.1:0", "--cpuprofile", prof)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var ready gatewayReadyLine
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.URL == "" {
			t.Fatalf("ready line %q: %v", line, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("chaos vmcp printed no ready line")
	}
	c := mcpClient(t, ready.URL)
	res, err := callTool(c, "alpha_echo")
	if err != nil || res.IsError {
		t.Fatalf("alpha_echo through the gateway: %+v, %v", res, err)
	}
	// SIGTERM shuts down cleanly, exit 130 (interrupted).
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := exitCodeOf(err); code != 130 {
			t.Fatalf("chaos vmcp after SIGTERM: exit %d (%v), want 130 (interrupted)", code, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("chaos vmcp did not stop within 10s of SIGTERM")
	}
	// --cpuprofile wrote a profile (gzip-compressed protobuf) on shutdown.
	if data, err := os.ReadFile(prof); err != nil || len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
		t.Fatalf("--cpuprofile %s: %d bytes, err %v: want a gzip-compressed pprof profile", prof, len(data), err)
	}
}

// TestVMCPCommandBadConfig: a bad config and a missing --config are usage
// errors (exit 2) that say what is wrong.
func TestVMCPCommandBadConfig(t *testing.T) {
	cfg := writeScript(t, "backends:\n  - {name: a, url: \"ftp://x\"}\n")
	out, err := exec.Command(chaosBin, "vmcp", "--config", cfg).CombinedOutput()
	if exitCodeOf(err) != 2 || !strings.Contains(string(out), "script.yaml:2") || !strings.Contains(string(out), "url") {
		t.Fatalf("bad config: %v, output %q", err, out)
	}
	out, err = exec.Command(chaosBin, "vmcp").CombinedOutput()
	if exitCodeOf(err) != 2 || !strings.Contains(string(out), "--config is required") {
		t.Fatalf("no --config: %v, output %q", err, out)
	}
}

// TestVMCPCommandRefusesAnonymousNetworkListen: `chaos vmcp --listen
// 0.0.0.0:PORT` with anonymous auth exits 2 with an error that says how to
// proceed, without serving.
func TestVMCPCommandRefusesAnonymousNetworkListen(t *testing.T) {
	cfg := writeScript(t, "backends:\n  - {name: alpha, url: \"http://127.0.0.1:9/mcp\"}\nincomingAuth: {type: anonymous}\n")
	cmd := exec.Command(chaosBin, "vmcp", "--config", cfg, "--listen", "0.0.0.0:0")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("chaos vmcp --listen 0.0.0.0:0 (anonymous): %v, output %s; want exit 2", err, out)
	}
	for _, how := range []string{"refusing to listen", "allowNetwork: true", "type: bearer"} {
		if !strings.Contains(string(out), how) {
			t.Errorf("error does not say %q: %s", how, out)
		}
	}
	if strings.Contains(string(out), `"url"`) {
		t.Fatalf("printed a ready line: %s", out)
	}
}
