package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// canaryRE matches every canary credential of TestNoCredentialInAnyOutput.
var canaryRE = regexp.MustCompile(`CANARY[A-Z0-9]*`)

// lockedBuffer is a bytes.Buffer safe for a copying goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// server is a chaos server process whose every output byte is kept.
type server struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// startServer starts chaos with args and env, decodes its ready line into
// ready and keeps the rest of stdout and all of stderr.
func startServer(t *testing.T, ready any, env []string, args ...string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(chaosBin, args...), out: &lockedBuffer{}, done: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = s.out
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cmd.Process.Kill(); _ = s.cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		defer close(s.done)
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = s.out.Write([]byte(line))
		_, _ = io.Copy(s.out, r)
	}()
	select {
	case line := <-lines:
		if err := json.Unmarshal([]byte(line), ready); err != nil {
			t.Fatalf("chaos %s: ready line %q: %v\n%s", args[0], line, err, s.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("chaos %s: no ready line within 30s", args[0])
	}
	return s
}

// stop ends the server with SIGINT and returns everything it printed.
func (s *server) stop(t *testing.T) string {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("chaos %s did not stop within 30s of SIGINT", s.cmd.Args[1])
	}
	_ = s.cmd.Wait()
	return s.out.String()
}

// TestNoCredentialInAnyOutput runs every command that takes credentials
// with canary ones (URL user information, tokens in flags, files and the
// environment) through a real deployment (backend, proxy, gateway,
// experiment, report) and greps every line and file they write: ready
// lines, verbose logs, errors, progress, the journal and the HTML report.
func TestNoCredentialInAnyOutput(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tok")
	if err := os.WriteFile(tokFile, []byte("CANARYBACKENDADMIN\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{} // what → its text
	var backend struct{ URL, Admin string }
	b := startServer(t, &backend, nil, "backend", "--script", writeScript(t, "name: b\nprotocol: legacy\ntools: [{name: echo}]\n"),
		"--admin-token-file", tokFile, "-v")
	var proxied ProxyReadyLine
	upstream := strings.Replace(backend.URL, "http://", "http://user:CANARYUPSTREAMPW@", 1)
	p := startServer(t, &proxied, nil, "proxy", "--upstream", upstream, "--admin-token", "CANARYPROXYADMIN", "-v")
	if proxied.Upstream == "" || strings.Contains(proxied.Upstream, "CANARY") {
		t.Fatalf("proxy ready line upstream %q: want it with the user information redacted", proxied.Upstream)
	}
	cfg := filepath.Join(dir, "gw.yaml")
	gwBackend := strings.Replace(proxied.URL, "http://", "http://gw:CANARYGATEWAYBACKENDPW@", 1)
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("backends:\n  - {name: b, url: %q}\nincomingAuth: {type: bearer, tokenEnv: CHAOS_TEST_GW_TOKEN}\n", gwBackend)), 0o644); err != nil {
		t.Fatal(err)
	}
	gwEnv := []string{"CHAOS_TEST_GW_TOKEN=CANARYGATEWAYTOKEN"}
	var gw gatewayReadyLine
	g := startServer(t, &gw, gwEnv, "vmcp", "--config", cfg, "--listen", "127.0.0.1:0", "-v")

	// The gateway's /status, with its token.
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(gw.URL, "/mcp")+"/status", nil)
	req.Header.Set("Authorization", "Bearer CANARYGATEWAYTOKEN")
	if resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req); err == nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		outputs["vmcp /status"] = string(body)
	} else {
		t.Fatal(err)
	}

	// An experiment whose gateway URL carries credentials, its token and
	// the proxy's admin token from the environment: progress, journal,
	// and the report of the journal.
	journal := filepath.Join(dir, "journal.json")
	expEnv := append([]string{"CHAOS_TEST_EXP_AUTH=CANARYGATEWAYTOKEN", "CHAOS_TEST_EXP_ADMIN=CANARYPROXYADMIN"}, gwEnv...)
	exp := exec.Command(chaosBin, "experiment", "run", shipped("error-names-backend.yaml"), "--dry-run", "--journal", journal,
		"--param", "gateway="+strings.Replace(gw.URL, "http://", "http://exp:CANARYEXPERIMENTPW@", 1),
		"--param", "backend=b", "--param", "tool=b_echo", "--param", "control="+proxied.Admin,
		"--param", "authEnv=CHAOS_TEST_EXP_AUTH", "--param", "tokenEnv=CHAOS_TEST_EXP_ADMIN")
	exp.Env = append(os.Environ(), expEnv...)
	out, _ := runBounded(t, exp)
	outputs["experiment run"] = out
	data, err := os.ReadFile(journal)
	if err != nil {
		t.Fatalf("no journal: %v\n%s", err, out)
	}
	outputs["journal"] = string(data)
	if !json.Valid(data) {
		t.Fatalf("the redacted journal is not JSON:\n%s", data)
	}
	html := filepath.Join(dir, "journal.html")
	rep, _ := runBounded(t, exec.Command(chaosBin, "report", journal, "-o", html))
	outputs["report"] = rep
	if data, err = os.ReadFile(html); err != nil {
		t.Fatalf("no report: %v\n%s", err, rep)
	}
	outputs["report html"] = string(data)
	// The same journal as a harness from before redaction wrote it: its
	// target URL with the password. Its report is redacted all the same.
	old := filepath.Join(dir, "old-journal.json")
	if err := os.WriteFile(old, []byte(strings.ReplaceAll(outputs["journal"], "[redacted]@", "exp:CANARYOLDJOURNALPW@")), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); !strings.Contains(string(b), "http://exp:CANARYOLDJOURNALPW@") {
		t.Fatalf("the old journal has no credentials in its target:\n%s", b)
	}
	oldHTML := filepath.Join(dir, "old-journal.html")
	outputs["report of an old journal"], _ = runBounded(t, exec.Command(chaosBin, "report", old, "-o", oldHTML))
	if data, err = os.ReadFile(oldHTML); err != nil {
		t.Fatalf("no report of the old journal: %v\n%s", err, outputs["report of an old journal"])
	}
	outputs["report html of an old journal"] = string(data)
	if !strings.Contains(string(data), "[redacted]@") {
		t.Error("the report of the old journal does not show its target redacted")
	}

	// Errors quoting a URL with credentials.
	outputs["proxy bad upstream"], _ = runBounded(t, exec.Command(chaosBin, "proxy", "--upstream", "http://u:CANARYBADPORT@127.0.0.1:0/mcp"))
	outputs["experiment init unreachable"], _ = runBounded(t, exec.Command(chaosBin, "experiment", "init", "--gateway", "http://u:CANARYINIT@127.0.0.1:1/mcp", "--out", "-"))

	outputs["vmcp"] = g.stop(t)
	outputs["proxy"] = p.stop(t)
	outputs["backend"] = b.stop(t)
	for what, text := range outputs {
		if text == "" && what != "backend" {
			t.Errorf("%s: no output at all: the grep proves nothing", what)
		}
		if m := canaryRE.FindAllString(text, -1); len(m) > 0 {
			t.Errorf("%s shows credentials %v:\n%s", what, m, text)
		}
	}
	if !strings.Contains(outputs["experiment run"], "[redacted]@") {
		t.Errorf("experiment run: the gateway URL is not shown redacted:\n%s", outputs["experiment run"])
	}
}

// runBounded runs cmd to its end (at most 2 minutes) and returns its
// combined output and exit status.
func runBounded(t *testing.T, cmd *exec.Cmd) (string, int) {
	t.Helper()
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return out.String(), exitCodeOf(err)
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not end within 2 minutes:\n%s", cmd.Args, out.String())
	}
	return "", 0
}
