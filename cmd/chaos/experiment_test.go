package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
)

// End-to-end: the reference gateway (`chaos vmcp`) in front of REAL mcp-go
// servers (proxytest, in this process), each behind a `chaos proxy`
// process, and `chaos experiment run` as a process.

// spawnReady starts chaos with args and decodes its first stdout line (its
// ready line) into ready. The process is killed at cleanup.
func spawnReady(t *testing.T, ready any, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(chaosBin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("chaos %s stderr:\n%s", args[0], stderr.String())
		}
	})
	readReady(t, stdout, ready)
	return cmd
}

// readReady decodes the first line of r (a ready line) into ready, within
// 20 s.
func readReady(t *testing.T, r io.Reader, ready any) {
	t.Helper()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case line, ok := <-lines:
		if !ok {
			t.Fatal("chaos exited before its ready line")
		}
		if err := json.Unmarshal([]byte(line), ready); err != nil {
			t.Fatalf("ready line %q: %v", line, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("chaos: no ready line within 20s")
	}
}

type e2eDeployment struct {
	gateway, health string
	proxies         map[string]ProxyReadyLine
}

// startE2E starts real mcp-go backends alpha and beta, a chaos proxy in
// front of each, and chaos vmcp in front of the proxies (with a health
// monitor and a breaker; gatewayExtra adds configuration).
func startE2E(t *testing.T, gatewayExtra string) *e2eDeployment {
	t.Helper()
	d := &e2eDeployment{proxies: map[string]ProxyReadyLine{}}
	var backends strings.Builder
	for _, name := range []string{"alpha", "beta"} {
		b, err := proxytest.Start(name, proxytest.StreamableHTTP)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		var ready ProxyReadyLine
		spawnReady(t, &ready, "proxy", "--upstream", b.URL, "--lease-ttl", "5s")
		d.proxies[name] = ready
		fmt.Fprintf(&backends, "  - {name: %s, url: %q}\n", name, ready.URL)
	}
	cfg := writeScript(t, "name: e2e\nbackends:\n"+backends.String()+
		"timeouts: {call: 2s, initialize: 2s, list: 2s}\n"+
		"health: {interval: 200ms, timeout: 150ms, unhealthyThreshold: 2}\n"+
		"breaker: {enabled: true, failureThreshold: 3, openTimeout: 1s}\n"+gatewayExtra)
	var gw gatewayReadyLine
	spawnReady(t, &gw, "vmcp", "--config", cfg, "--listen", "127.0.0.1:0")
	d.gateway = gw.URL
	d.health = strings.TrimSuffix(gw.URL, "/mcp") + "/api/backends/health"
	return d
}

// adminState reads a proxy's faults and lease.
func adminState(t *testing.T, admin string) (faults int, leaseActive bool) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(admin + "/faults")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Faults []any `json:"faults"`
		Lease  struct {
			Active  bool `json:"active"`
			Expired int  `json:"expired"`
		} `json:"lease"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return len(doc.Faults), doc.Lease.Active
}

// verifyClean fails unless every proxy holds no fault and no lease.
func (d *e2eDeployment) verifyClean(t *testing.T) {
	t.Helper()
	for name, p := range d.proxies {
		if n, active := adminState(t, p.Admin); n != 0 || active {
			t.Errorf("proxy %s not clean: %d faults, lease active %v", name, n, active)
		}
	}
}

// waitFaults waits until the proxy holds a fault (bounded).
func waitFaults(t *testing.T, admin string) {
	t.Helper()
	testwait.For(t, 30*time.Second, "a fault on the proxy", func() bool { n, _ := adminState(t, admin); return n > 0 })
}

type runResult struct {
	code    int
	stderr  string
	journal *history.Results
}

// startExperiment starts `chaos experiment run`; wait ends it.
func startExperiment(t *testing.T, file string, args ...string) (*exec.Cmd, *bytes.Buffer, string) {
	t.Helper()
	journal := filepath.Join(t.TempDir(), "journal.json")
	cmd := exec.Command(chaosBin, append([]string{"experiment", "run", file, "--journal", journal}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, &stderr, journal
}

func waitExperiment(t *testing.T, cmd *exec.Cmd, stderr *bytes.Buffer, journal string, limit time.Duration) runResult {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("chaos experiment run did not end within %s:\n%s", limit, stderr)
	}
	r := runResult{stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(journal); err == nil {
		defer f.Close()
		r.journal, err = history.ReadResults(f)
		if err != nil {
			t.Fatalf("journal: %v", err)
		}
	}
	return r
}

func runExperiment(t *testing.T, file string, args ...string) runResult {
	t.Helper()
	cmd, stderr, journal := startExperiment(t, file, args...)
	return waitExperiment(t, cmd, stderr, journal, 2*time.Minute)
}

// shipped returns the path of a shipped experiment.
func shipped(name string) string { return filepath.Join("..", "..", "experiments", name) }

func (d *e2eDeployment) params(backend string) []string {
	return []string{"--param", "gateway=" + d.gateway, "--param", "backend=" + backend,
		"--param", "tool=" + backend + "_echo", "--param", "control=" + d.proxies[backend].Admin}
}

// TestExperimentShippedSeedBehaviours runs every shipped experiment against
// the deployment: each must hold, and leave every proxy clean.
func TestExperimentShippedSeedBehaviours(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	d := startE2E(t, "")
	cases := []struct {
		file  string
		extra []string
	}{
		{"error-names-backend.yaml", []string{"--param", "arguments={\"text\": \"hi\"}", "--param", "within=2s"}},
		{"stall-does-not-hang.yaml", []string{"--param", "clientTimeout=20s"}}, // the default bound (5s): the gateway's call timeout is 2s
		{"breaker-opens-and-recovers.yaml", []string{"--param", "health=" + d.health, "--param", "failures=4",
			"--param", "opens=10s", "--param", "recovery=30s"}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".yaml"), func(t *testing.T) {
			r := runExperiment(t, shipped(c.file), append(d.params("beta"), c.extra...)...)
			if r.code != 0 {
				t.Fatalf("exit %d:\n%s", r.code, r.stderr)
			}
			if r.journal == nil || r.journal.Scenarios[0].Verdict != history.VerdictPassed || len(r.journal.Scenarios[0].Checks) < 5 {
				t.Fatalf("journal: %+v", r.journal)
			}
			d.verifyClean(t)
		})
	}
	t.Run("optimizer-excludes-unhealthy", func(t *testing.T) {
		od := startE2E(t, "optimizer: {enabled: true}\n")
		r := runExperiment(t, shipped("optimizer-excludes-unhealthy.yaml"), append(od.params("beta"),
			"--param", "health="+od.health, "--param", "unhealthy=20s", "--param", "recovery=30s")...)
		if r.code != 0 {
			t.Fatalf("exit %d:\n%s", r.code, r.stderr)
		}
		if !strings.Contains(r.stderr, "the optimizer leaves the backend out: ok") {
			t.Fatalf("no optimizer check in:\n%s", r.stderr)
		}
		od.verifyClean(t)
	})
}

// TestExperimentDroppedIsNotAnAnswer holds the stall and error experiments
// to a fixture gateway that closes the connection instead of answering a
// stalled or failed call: both deviate, "dropped without an answer" in the
// progress, the journal and the report (whose exit status is 1).
func TestExperimentDroppedIsNotAnAnswer(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	d := startE2E(t, "")
	front := startDropFront(t, d.gateway, time.Second) // before the gateway's 2s call timeout
	cases := []struct {
		file, check string
		extra       []string
	}{
		{"stall-does-not-hang.yaml", "method[1]: the stalled call is answered in bounded time", []string{"--param", "clientTimeout=20s"}},
		{"error-names-backend.yaml", "method[1]: the error names the backend", []string{"--param", "arguments={\"text\": \"hi\"}", "--param", "within=2s"}},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".yaml"), func(t *testing.T) {
			args := append(d.params("beta"), c.extra...)
			args = append(args, "--param", "gateway="+front)
			cmd, stderr, journal := startExperiment(t, shipped(c.file), args...)
			r := waitExperiment(t, cmd, stderr, journal, 2*time.Minute)
			t.Logf("chaos experiment run:\n%s", r.stderr)
			if r.code != 1 || !strings.Contains(r.stderr, c.check+": DEVIATED") || !strings.Contains(r.stderr, "dropped without an answer instead of an answered error") {
				t.Fatalf("exit %d, want 1 (deviated: dropped without an answer):\n%s", r.code, r.stderr)
			}
			var found bool
			for _, ck := range r.journal.Scenarios[0].Checks {
				if ck.Name == c.check {
					found = ck.Verdict == history.CheckFailed && strings.Contains(ck.Observed, "dropped without an answer")
				}
			}
			if sr := r.journal.Scenarios[0]; !found || sr.Verdict != history.VerdictFailed || !strings.Contains(sr.Reason, "dropped without an answer") {
				t.Fatalf("journal: no failed %q observing a dropped call: %+v", c.check, r.journal.Scenarios[0].Checks)
			}
			dropped := 0
			for _, ev := range r.journal.Scenarios[0].Events {
				if ev.Call != nil && ev.Call.Outcome == history.OutcomeDropped {
					dropped++
				}
			}
			if dropped == 0 {
				t.Error("no call of the journal has outcome dropped")
			}
			d.verifyClean(t)
			html := filepath.Join(t.TempDir(), "report.html")
			out, err := exec.Command(chaosBin, "report", journal, "-o", html).CombinedOutput()
			if exitOf(err) != 1 || !strings.Contains(string(out), "dropped without an answer") {
				t.Errorf("chaos report of a deviated journal: %v, want exit 1 naming the dropped call\n%s", err, out)
			}
			if page, _ := os.ReadFile(html); !strings.Contains(string(page), "dropped without an answer") {
				t.Error("the report does not say dropped without an answer")
			}
		})
	}
}

// file is an experiment on d with controls alpha and beta (their
// proxies), whose steady state is beta answering.
func (d *e2eDeployment) file(t *testing.T, leaseTTL, method string) string {
	t.Helper()
	return experimentFile(t, d.gateway, leaseTTL, method, "alpha", d.proxies["alpha"].Admin, "beta", d.proxies["beta"].Admin)
}

// experimentFile writes an experiment on gateway whose steady state is
// beta answering, with the backends' control URLs given as name, URL
// pairs.
func experimentFile(t *testing.T, gateway, leaseTTL, method string, controls ...string) string {
	t.Helper()
	var backends strings.Builder
	for i := 0; i+1 < len(controls); i += 2 {
		fmt.Fprintf(&backends, "    - {name: %s, control: %q}\n", controls[i], controls[i+1])
	}
	return writeScript(t, fmt.Sprintf(`title: e2e
deployment:
  gateway: %q
  backends:
%ssafeguards: {leaseTTL: %s, callTimeout: 5s, maxDuration: 2m}
steadyState:
  probes:
    - {name: beta answers, type: call_tool, tool: beta_echo, tolerance: {eventually: 10s}}
method:
%s`, gateway, backends.String(), leaseTTL, method))
}

const injectStall = `  - action:
      type: inject
      backend: beta
      faults: [{kind: stall, match: {method: tools/call}}]
`

func TestExperimentDeviationAbortsAndRollsBack(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	d := startE2E(t, "")
	f := d.file(t, "30s", injectStall+`  - action:
      type: inject
      backend: alpha
      faults: [{kind: http_status, status: 500}]
  - probe: {name: beta answers during the stall, type: call_tool, tool: beta_echo, timeout: 5s, expect: {within: 1s}}
  - pause: 1m
`)
	r := runExperiment(t, f)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (deviated):\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "beta answers during the stall: DEVIATED") || strings.Contains(r.stderr, "pause 1m") {
		t.Fatalf("deviation did not abort the method:\n%s", r.stderr)
	}
	for _, name := range []string{"rollback: alpha clean", "rollback: beta clean"} {
		found := false
		for _, c := range r.journal.Scenarios[0].Checks {
			found = found || (c.Name == name && c.Verdict == history.CheckPassed)
		}
		if !found {
			t.Errorf("journal lacks a passed %q", name)
		}
	}
	if r.journal.Scenarios[0].Verdict != history.VerdictFailed {
		t.Errorf("journal verdict %s", r.journal.Scenarios[0].Verdict)
	}
	d.verifyClean(t)
	// The journal renders as a report like any results document.
	journal := filepath.Join(t.TempDir(), "journal.json")
	if err := r.journal.WriteFile(journal); err != nil {
		t.Fatal(err)
	}
	html := filepath.Join(t.TempDir(), "report.html")
	if out, err := exec.Command(chaosBin, "report", journal, "-o", html).CombinedOutput(); exitOf(err) != 1 {
		t.Fatalf("chaos report of a deviated journal: %v, want exit 1\n%s", err, out)
	}
	page, _ := os.ReadFile(html)
	if !strings.Contains(string(page), "beta answers during the stall") {
		t.Errorf("the report does not show the experiment's checks")
	}
}

func TestExperimentSignalRollsBack(t *testing.T) {
	d := startE2E(t, "")
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, stderr, journal := startExperiment(t, d.file(t, "30s", injectStall+"  - pause: 1m\n"))
			waitFaults(t, d.proxies["beta"].Admin)
			_ = cmd.Process.Signal(sig)
			r := waitExperiment(t, cmd, stderr, journal, 30*time.Second)
			if r.code != 130 {
				t.Fatalf("exit %d, want 130:\n%s", r.code, r.stderr)
			}
			if r.journal == nil || !r.journal.Interrupted {
				t.Fatalf("journal not marked interrupted: %+v", r.journal)
			}
			d.verifyClean(t)
		})
	}
}

// TestExperimentSIGKILLLeaseExpires: a controller killed mid-fault cannot
// roll back; the proxy drops the faults when their lease runs out, and the
// gateway serves the backend again.
func TestExperimentSIGKILLLeaseExpires(t *testing.T) {
	d := startE2E(t, "")
	const ttl = 2 * time.Second
	cmd, stderr, journal := startExperiment(t, d.file(t, ttl.String(), injectStall+"  - pause: 1m\n"))
	killAndAwaitLeaseExpiry(t, cmd, stderr, journal, d.proxies["beta"].Admin, ttl, d.gateway)
}

// killAndAwaitLeaseExpiry waits until the experiment cmd has a fault set on
// the control API admin and renewed its lease of ttl, SIGKILLs it, and
// checks that the faults are gone within the lease (+1s) and that the
// gateway serves beta_echo again. It returns the experiment's output.
func killAndAwaitLeaseExpiry(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, journal, admin string, ttl time.Duration, gateway string) string {
	t.Helper()
	waitFaults(t, admin)
	time.Sleep(ttl) // at least one renewal happened
	if n, active := adminState(t, admin); n == 0 || !active {
		t.Fatalf("renewals did not keep the fault: %d faults, lease %v", n, active)
	}
	_ = cmd.Process.Kill()
	killed := time.Now()
	r := waitExperiment(t, cmd, out, journal, 10*time.Second)
	for {
		n, _ := adminState(t, admin)
		if n == 0 {
			break
		}
		if time.Since(killed) > ttl+3*time.Second {
			t.Fatalf("faults still set %s after the controller died (lease %s)", time.Since(killed), ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	healed := time.Since(killed)
	t.Logf("faults expired %s after SIGKILL (lease %s)", healed.Round(time.Millisecond), ttl)
	if healed > ttl+time.Second {
		t.Errorf("faults outlived their lease: %s > %s (+1s slack)", healed, ttl)
	}
	c := mcpClient(t, gateway)
	if res, err := callTool(c, "beta_echo"); err != nil || res.IsError {
		t.Fatalf("beta_echo after the lease expired: %+v %v", res, err)
	}
	return r.stderr
}

func TestExperimentDryRunAppliesNothing(t *testing.T) {
	d := startE2E(t, "")
	file := d.file(t, "30s", injectStall+"  - pause: 1m\n")
	// Without --journal, in an empty working directory: it stays empty.
	wd := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chaosBin, "experiment", "run", "--dry-run", file)
	cmd.Dir = wd
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{"plan (dry run)", "preflight: control beta: ok", "nothing applied",
		"method[0]: inject [{kind: stall, match: {method: tools/call}}] on beta"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "map[") {
		t.Errorf("the plan prints faults as Go maps:\n%s", out)
	}
	if left, _ := os.ReadDir(wd); len(left) > 0 {
		t.Errorf("a dry run without --journal wrote %s in the working directory", left[0].Name())
	}
	// With --journal, the journal is written.
	r := runExperiment(t, file, "--dry-run")
	if r.code != 0 || r.journal == nil {
		t.Fatalf("exit %d, journal %v:\n%s", r.code, r.journal != nil, r.stderr)
	}
	d.verifyClean(t)
	resp, err := http.Get(d.proxies["beta"].Admin + "/lease")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lease struct{ Expired int }
	_ = json.NewDecoder(resp.Body).Decode(&lease)
	if lease.Expired != 0 {
		t.Fatalf("a lease was taken and expired during a dry run")
	}
}

func TestExperimentBadInputAndUnreachable(t *testing.T) {
	bad := writeScript(t, "title: x\ndeployment: {gateway: \"http://127.0.0.1:1/mcp\"}\nsteadyState:\n  probes:\n    - {type: call_tool, tool: t, expect: {outcom: ok}}\n")
	r := runExperiment(t, bad)
	if r.code != 2 || !strings.Contains(r.stderr, "script.yaml:5: steadyState.probes[0].expect.outcom: unknown field") {
		t.Fatalf("bad file: exit %d:\n%s", r.code, r.stderr)
	}
	if r := runExperiment(t, bad, "--param", "x"); r.code != 2 {
		t.Fatalf("bad --param: exit %d", r.code)
	}
	d := startE2E(t, "")
	f := strings.Replace(d.file(t, "30s", injectStall), "", "", 1)
	data, _ := os.ReadFile(f)
	_ = os.WriteFile(f, []byte(strings.Replace(string(data), d.proxies["alpha"].Admin, "http://127.0.0.1:1", 1)), 0o644)
	r = runExperiment(t, f)
	if r.code != 3 || !strings.Contains(r.stderr, "before any fault: control alpha") {
		t.Fatalf("unreachable proxy: exit %d:\n%s", r.code, r.stderr)
	}
	d.verifyClean(t)
	if out, err := exec.Command(chaosBin, "experiment", "run", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "Exit codes") {
		t.Fatalf("--help: %v %s", err, out)
	}
}

func TestExperimentInitWritesARunnableStarter(t *testing.T) {
	t.Parallel() // owns its processes, directories and ports (see TestMain)
	d := startE2E(t, "")
	out := filepath.Join(t.TempDir(), "starter.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var msg []byte
	var err error
	// The test's premise is a healthy deployment: under .ci/load the
	// gateway's health probes timed out and it refused the session ("no
	// backend available"); init said so, rightly. Three tries, 2 s apart.
	for try := 1; ; try++ {
		msg, err = exec.CommandContext(ctx, chaosBin, "experiment", "init", "--gateway", d.gateway,
			"--control", "beta="+d.proxies["beta"].Admin, "--out", out).CombinedOutput()
		if err == nil || try == 3 || !strings.Contains(string(msg), "unhealthy (health check)") {
			break
		}
		t.Logf("init, try %d: the gateway found its backends unhealthy: %s", try, msg)
		time.Sleep(2 * time.Second)
	}
	if err != nil {
		t.Fatalf("init: %v\n%s", err, msg)
	}
	data, _ := os.ReadFile(out)
	if !strings.Contains(string(data), "tool: \"beta_echo\"") && !strings.Contains(string(data), "beta_") {
		t.Fatalf("starter does not target beta:\n%s", data)
	}
	if strings.Contains(string(data), "outcome: any") || !strings.Contains(string(data), "expect: {outcome: ok, within:") ||
		!strings.Contains(string(data), `arguments: "{\"text\":\"chaos\"}"`) {
		t.Fatalf("starter's steady state does not demand ok from the call init made:\n%s", data)
	}
	r := runExperiment(t, out)
	if r.code != 0 {
		t.Fatalf("starter experiment: exit %d:\n%s\n%s", r.code, r.stderr, data)
	}
	if !strings.Contains(r.stderr, "the error names the backend: ok") {
		t.Fatalf("starter has no fault step:\n%s", r.stderr)
	}
	d.verifyClean(t)

	// A starter without a control URL (no method): its steady state fails
	// when the tool starts erroring.
	plain := filepath.Join(t.TempDir(), "plain.yaml")
	if msg, err := exec.CommandContext(ctx, chaosBin, "experiment", "init", "--gateway", d.gateway, "--out", plain).CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, msg)
	}
	data, _ = os.ReadFile(plain)
	backend := "alpha" // the first backend, with no control URL given
	if !strings.Contains(string(data), `backend: "alpha"`) {
		t.Fatalf("starter does not target alpha:\n%s", data)
	}
	if r := runExperiment(t, plain); r.code != 0 {
		t.Fatalf("starter before the fault: exit %d:\n%s", r.code, r.stderr)
	}
	admin := d.proxies[backend].Admin
	req, _ := http.NewRequest(http.MethodPost, admin+"/faults?ttl=2m", strings.NewReader(`[{"kind": "http_status", "status": 503, "match": {"method": "tools/call"}}]`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("inject: %v %v", err, resp)
	}
	resp.Body.Close()
	t.Cleanup(func() {
		req, _ := http.NewRequest(http.MethodDelete, admin+"/faults", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	r = runExperiment(t, plain)
	if r.code != 1 || !strings.Contains(r.stderr, "steady-state before: tool answers in time: DEVIATED") ||
		!strings.Contains(r.stderr, "an answered error instead of a result") {
		t.Fatalf("starter with the tool erroring: exit %d, want 1 (deviated):\n%s", r.code, r.stderr)
	}
	// Init itself refuses to write a starter from tools that do not work.
	none := filepath.Join(t.TempDir(), "none.yaml")
	msg, err = exec.CommandContext(ctx, chaosBin, "experiment", "init", "--gateway", d.gateway, "--out", none).CombinedOutput()
	if exitOf(err) != 1 || !strings.Contains(string(msg), "no tool answered a result") {
		t.Fatalf("init against erroring tools: %v, want exit 1\n%s", err, msg)
	}
	if _, err := os.Stat(none); err == nil {
		t.Error("init wrote a starter from tools that do not work")
	}
	if out, err := exec.Command(chaosBin, "experiment", "init", "--gateway", d.gateway, "--out", out).CombinedOutput(); err == nil {
		t.Fatalf("init overwrote its output without --force: %s", out)
	}
}
