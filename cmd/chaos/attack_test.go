package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagAttacks: bad flags of every command are usage errors (exit 2)
// that name what is wrong, before anything starts. One row per attack
// found by trying the commands as a new user would.
func TestFlagAttacks(t *testing.T) {
	script := writeScript(t, "name: b\ntools: [{name: echo}]\n")
	badListen := writeScript(t, "name: b\nlisten: 999.1.1.1:0\ntools: [{name: echo}]\n")
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"backend --listen nonsense", nil, []string{"backend", "--script", script, "--listen", "nonsense"}, `listen: bad address "nonsense"`},
		{"backend --admin off loopback without a token", nil, []string{"backend", "--script", script, "--admin", "0.0.0.0:0"}, "needs an admin token (--admin-token-file FILE or $CHAOS_ADMIN_TOKEN)"},
		{"backend --listen off loopback without a token", nil, []string{"backend", "--script", script, "--listen", "0.0.0.0:0"}, "MCP listener on non-loopback address \"0.0.0.0:0\" needs a token"},
		{"backend --listen that cannot be bound", nil, []string{"backend", "--script", script, "--listen", "127.0.0.1:99999"}, "listen: bad address"},
		{"script listen that cannot be bound", []string{"VMCP_CHAOS_TOKEN=t"}, []string{"backend", "--script", badListen}, "listen 999.1.1.1:0"},
		{"backend --token with --token-file", nil, []string{"backend", "--script", script, "--token", "a", "--token-file", script}, "not both"},
		{"proxy --lease-ttl 0s", nil, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--lease-ttl", "0s"}, "--lease-ttl 0s: want a duration > 0"},
		{"proxy --lease-ttl above the maximum", nil, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--lease-ttl", "1h"}, "want 0 < lease-ttl <= max-lease-ttl"},
		{"proxy --listen off loopback without a token", nil, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--listen", "0.0.0.0:0"}, "MCP listener on non-loopback address"},
		{"proxy --admin off loopback without a token", nil, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--admin", "0.0.0.0:0"}, "needs an admin token"},
		{"profile check --timeout -1s", nil, []string{"profile", "check", "--timeout", "-1s", "x.yaml"}, "--timeout -1s: want a duration > 0"},
		{"profile check --timeout 0s", nil, []string{"profile", "check", "--timeout", "0s", "x.yaml"}, "--timeout 0s: want a duration > 0"},
		{"experiment init --gateway not a url", nil, []string{"experiment", "init", "--gateway", "not a url", "--out", "-"}, `--gateway "not a url": want an http or https URL`},
		{"experiment init --control not a url", nil, []string{"experiment", "init", "--gateway", "http://127.0.0.1:1/mcp", "--control", "beta=nope", "--out", "-"}, `--control beta "nope"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runChaosEnv(t, tc.env, tc.args...)
			if code := exitCodeOf(err); code != exitUsage || !strings.Contains(string(out), tc.want) {
				t.Fatalf("chaos %s: exit %d, %s\nwant exit 2 saying %q", strings.Join(tc.args, " "), code, out, tc.want)
			}
		})
	}
}

// TestEveryNumericFlagIsBounded: every duration flag of every command
// given -1s, and every integer flag given -1, is refused with exit 2 naming
// it; a new numeric flag is covered without a new row.
func TestEveryNumericFlagIsBounded(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			bad := map[string]string{"duration": "-1s", "int": "-1", "int64": "-1"}[f.Value.Type()]
			if bad == "" {
				return
			}
			n++
			args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "chaos ")), "--"+f.Name, bad)
			out, err := runChaos(t, args...)
			if strings.Contains(string(out), "arg(s)") { // a command that takes a file
				args = append(args, "x.yaml")
				out, err = runChaos(t, args...)
			}
			if code := exitCodeOf(err); code != exitUsage || !strings.Contains(string(out), "--"+f.Name+" "+bad) {
				t.Errorf("chaos %s: exit %d, %s; want exit 2 naming the flag", strings.Join(args, " "), code, out)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if n < 10 {
		t.Fatalf("found %d numeric flags: the walk is broken", n)
	}
}

// TestMCPListenerTokenOffLoopback: a backend and a proxy serve MCP off
// loopback only with a token, and then refuse requests without it.
func TestMCPListenerTokenOffLoopback(t *testing.T) {
	const tok = "mcp-token-4b1d"
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(tok), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ready := spawn(t, "--script", writeScript(t, "name: b\nprotocol: legacy\ntools: [{name: echo}]\n"), "--listen", "0.0.0.0:0", "--token-file", tokFile)
	url := strings.Replace(ready.URL, "0.0.0.0", "127.0.0.1", 1)
	status := func(url, header, value string) int {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if header != "" {
			req.Header.Set(header, value)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(url, "", ""); got != http.StatusUnauthorized {
		t.Fatalf("backend MCP without the token: %d, want 401", got)
	}
	if got := status(url, "Authorization", "Bearer wrong"); got != http.StatusUnauthorized {
		t.Fatalf("backend MCP with a wrong token: %d, want 401", got)
	}
	if got := status(url, "Authorization", "Bearer "+tok); got == http.StatusUnauthorized {
		t.Fatalf("backend MCP with the token: %d", got)
	}

	cmd := exec.Command(chaosBin, "proxy", "--upstream", url, "--listen", "0.0.0.0:0")
	cmd.Env = append(cmd.Environ(), "VMCP_CHAOS_TOKEN=proxy-tok")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var pr ProxyReadyLine
	readReady(t, stdout, &pr)
	purl := strings.Replace(pr.URL, "0.0.0.0", "127.0.0.1", 1)
	if got := status(purl, "", ""); got != http.StatusUnauthorized {
		t.Fatalf("proxy MCP without its token: %d, want 401", got)
	}
	// The proxy's token in Proxy-Authorization is its own; the backend
	// behind it still wants its token, so the relayed request is refused
	// by the backend (401) until the client's Authorization carries it.
	req, _ := http.NewRequest(http.MethodPost, purl, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Proxy-Authorization", "Bearer proxy-tok")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		t.Fatalf("proxy MCP with both tokens: %d", resp.StatusCode)
	}
	if got := status(purl, "Proxy-Authorization", "Bearer proxy-tok"); got != http.StatusUnauthorized {
		t.Fatalf("proxy token without the backend's: %d, want the backend's 401", got)
	}
}

// runChaosEnv is runChaos with extra environment variables.
func runChaosEnv(t *testing.T, env []string, args ...string) ([]byte, error) {
	t.Helper()
	if len(env) == 0 {
		return runChaos(t, args...)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	return runChaos(t, args...)
}

// TestServersExit130OnSignals: the long-running commands (backend, proxy,
// vmcp) stop on SIGINT and SIGTERM with exit 130, like every command.
func TestServersExit130OnSignals(t *testing.T) {
	script := writeScript(t, "name: b\nprotocol: legacy\ntools: [{name: echo}]\n")
	_, up := spawn(t, "--script", script)
	cfg := filepath.Join(t.TempDir(), "gw.yaml")
	if err := os.WriteFile(cfg, []byte("backends:\n  - {name: b, url: '"+up.URL+"'}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"backend", "--script", script},
		{"proxy", "--upstream", up.URL},
		{"vmcp", "--config", cfg, "--listen", "127.0.0.1:0"},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
			t.Run(args[0]+"/"+sig.String(), func(t *testing.T) {
				cmd := exec.Command(chaosBin, args...)
				stdout, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
				var ready map[string]any
				readReady(t, stdout, &ready)
				_ = cmd.Process.Signal(sig)
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if code := exitCodeOf(err); code != exitInterrupted {
						t.Fatalf("chaos %s after %s: exit %d (%v), want 130", args[0], sig, code, err)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("chaos %s did not stop within 20s of %s", args[0], sig)
				}
			})
		}
	}
}
