package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runChaos runs the chaos binary and returns its stdout, stderr and exit
// status.
func runChaosProfile(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaosBin, args...)
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("chaos %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

// TestProfileCheck: `chaos profile check` passes the shipped chaos vmcp
// profile with every declared capability confirmed (exit 0), fails a
// profile whose declared health API path and session field do not match
// the gateway (exit 1, naming the checks), and rejects a bad profile with
// file:line: field (exit 2).
func TestProfileCheck(t *testing.T) {
	good := filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml")
	out, errOut, code := runChaosProfile(t, "profile", "check", good)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"tools found", "alpha/echo as alpha_echo (by origin marker)", "call beta_echo", "health-api", "session-api",
		"breaker state", "metrics", "keepalive", "optimizer", "find_tool", "everything declared works"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "FAILED") {
		t.Error("a check failed against the reference")
	}

	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, _ := filepath.Abs(filepath.Join("..", "..", "harness", "targets", "templates", "chaos-vmcp.yaml.tmpl"))
	wrong := strings.NewReplacer("configTemplate: ../harness/targets/templates/chaos-vmcp.yaml.tmpl", "configTemplate: "+tmpl,
		"path: /api/backends/health", "path: /api/health", "status: state", "status: phase",
		"capabilities: [session-api, health-api, breaker, keepalive, metrics, optimizer, reinit-on-404]", "capabilities: [session-api, health-api]").Replace(string(data))
	bad := filepath.Join(t.TempDir(), "wrong.yaml")
	if err := os.WriteFile(bad, []byte(wrong), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runChaosProfile(t, "profile", "check", bad)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 1 || !strings.Contains(errOut, "2 check(s) failed") {
		t.Fatalf("exit %d, want 1 with 2 failed checks", code)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "health-api" || f[0] == "session-api") && f[1] != "FAILED" {
			t.Errorf("want FAILED: %s", line)
		}
		if len(f) >= 2 && f[0] == "tools" && f[2] != "PASSED" {
			t.Errorf("want PASSED: %s", line)
		}
	}
	if !strings.Contains(out, "/api/health: ") || !strings.Contains(out, "HTTP 404") {
		t.Error("the failed health check does not show the URL and the 404")
	}

	broken := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(broken, []byte("name: gw\ncommand: [gw]\nhealthAPI:\n  backends: servers\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runChaosProfile(t, "profile", "check", broken)
	if code != 2 || !strings.Contains(errOut, broken+":4: healthAPI.backends: JSON pointer") || strings.Contains(out, "starting") {
		t.Fatalf("bad profile: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if _, _, code = runChaosProfile(t, "profile", "check"); code == 0 {
		t.Error("no file: exit 0")
	}
}

// TestRunProfileFlag: `chaos run --profile` runs the gateway the profile
// describes (named by it), and refuses a missing profile, --target
// reference with a profile, and a bad --tool-names beside a profile (it
// overrides the profile's toolNames, so it is read, never ignored).
func TestRunProfileFlag(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	out, errOut, code := runChaosProfile(t, "run", "--profile", filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml"), "--label", "wrapping/legacy/streamable-http", "--out", filepath.Join(t.TempDir(), "r.json"))
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 0 || !strings.Contains(out, "against chaos-vmcp") || !strings.Contains(out, "1 passed (1 with checks skipped), 0 failed") {
		t.Fatalf("exit %d", code)
	}
	_, errOut, code = runChaosProfile(t, "run", "--profile", filepath.Join(t.TempDir(), "none.yaml"))
	if code != 2 || !strings.Contains(errOut, "none.yaml") {
		t.Fatalf("missing profile: exit %d %s", code, errOut)
	}
	_, errOut, code = runChaosProfile(t, "run", "--target", "reference", "--profile", filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml"), "--list")
	if code == 0 || !strings.Contains(errOut, "--profile") {
		t.Fatalf("--target reference with --profile: exit %d %s", code, errOut)
	}
	_, errOut, code = runChaosProfile(t, "run", "--profile", filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml"), "--tool-names", "{nope}", "--list")
	if code != 2 || !strings.Contains(errOut, "--tool-names") {
		t.Fatalf("a bad --tool-names with --profile: exit %d %s", code, errOut)
	}
}

// TestProfileCheckStartsEachFeatureSet: `chaos profile check` starts the
// gateway once per distinct feature set the catalogue renders, so a
// gateway that refuses one of them fails the check (exit 1) with the
// gateway's own message: fixture a refusing metrics, whose profile
// declares none (one start with the declared features passes), fails on
// the breaker scenario's config, which asks for metrics anyway.
func TestProfileCheckStartsEachFeatureSet(t *testing.T) {
	useFixtureGW(t)
	prof := filepath.Join("..", "..", "scenarios", "testdata", "profiles", "fixture-a-rejects-metrics.yaml")
	out, errOut, code := runChaosProfile(t, "profile", "check", prof)
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var failed []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "FAILED") {
			failed = append(failed, line)
		}
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "config: breaker, metrics") ||
		!strings.Contains(failed[0], "breaker/legacy/streamable-http") || !strings.Contains(failed[0], "metrics: service name cannot be empty") {
		t.Errorf("want exactly the breaker scenario's config failed, with the gateway's message; failed: %q", failed)
	}
	if !strings.Contains(out, "start ") || strings.Contains(out, "start                     FAILED") {
		t.Errorf("the start with the declared features should pass")
	}
}

// TestProfileCheckAuthenticates: a gateway that wants a bearer token on
// every request (chaos vmcp with bearer incomingAuth: MCP, /status, the
// health and session APIs, /metrics) passes `chaos profile check` when the
// profile's headers carry the token from the environment, and the token
// never shows in the output; the config template reaches the token file
// beside the profile through {{.ProfileDir}}. Without the headers the
// gateway refuses the harness (exit 1). The recovery after a restart of
// beta is measured and reported.
func TestProfileCheckAuthenticates(t *testing.T) {
	const token = "tok-3f9a1c-never-printed"
	dir := t.TempDir()
	t.Setenv("VMCP_CHAOS_AUTH_TEST_TOKEN", token)
	tmpl, err := os.ReadFile(filepath.Join("..", "..", "harness", "targets", "templates", "chaos-vmcp.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	authed := strings.Replace(string(tmpl), "incomingAuth: {type: anonymous}", `incomingAuth: {type: bearer, tokenFile: "{{.ProfileDir}}/token"}`, 1)
	if authed == string(tmpl) {
		t.Fatal("the shipped template has no incomingAuth line to replace")
	}
	prof, err := os.ReadFile(filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := strings.NewReplacer("configTemplate: ../harness/targets/templates/chaos-vmcp.yaml.tmpl", "configTemplate: gw.tmpl",
		"timeout: 30s", "timeout: 10s",
		"capabilities: [session-api, health-api, breaker, keepalive, metrics, optimizer, reinit-on-404]", "capabilities: [session-api, health-api, metrics]").Replace(string(prof))
	for name, data := range map[string]string{
		"token": token + "\n", "gw.tmpl": authed, "noauth.yaml": base,
		"auth.yaml": base + "headers:\n  all: {Authorization: 'Bearer {{env \"VMCP_CHAOS_AUTH_TEST_TOKEN\"}}'}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := runChaosProfile(t, "profile", "check", filepath.Join(dir, "auth.yaml"))
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 0 {
		t.Fatalf("with the headers: exit %d, want 0", code)
	}
	if strings.Contains(out+errOut, token) {
		t.Fatal("the token shows in the output")
	}
	for _, want := range []string{"health-api", "session-api", "metrics", "Prometheus text", "recovery", "beta's tools were back after"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	out, errOut, code = runChaosProfile(t, "profile", "check", filepath.Join(dir, "noauth.yaml"))
	t.Logf("without headers, stdout:\n%s\nstderr:\n%s", out, errOut)
	if code != 1 || !strings.Contains(out, "authorization required") {
		t.Fatalf("without the headers: exit %d, want 1 with the gateway's refusal", code)
	}
}

// useFixtureGW builds the fixture gateway (harness/internal/fixturegw) and
// sets VMCP_CHAOS_FIXTUREGW to it, as the fixture profiles expect.
func useFixtureGW(t *testing.T) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fixturegw")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../../harness/internal/fixturegw").CombinedOutput(); err != nil {
		t.Fatalf("build fixturegw: %v\n%s", err, out)
	}
	t.Setenv("VMCP_CHAOS_FIXTUREGW", bin)
}
