package experiment_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/experiment"
	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/proxy"
	"github.com/vmcp-chaos/vmcp-chaos/proxy/proxytest"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// deployment is the reference gateway in front of two real mcp-go
// backends, each behind a proxy, all in process.
type deployment struct {
	gateway string
	health  string
	proxies map[string]*proxy.Proxy
}

func startDeployment(t *testing.T) *deployment {
	t.Helper()
	d := &deployment{proxies: map[string]*proxy.Proxy{}}
	var backends strings.Builder
	for _, name := range []string{"alpha", "beta"} {
		b, err := proxytest.Start(name, proxytest.StreamableHTTP)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		p, err := proxy.New(proxy.Options{Upstream: b.URL})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = p.Close(ctx)
		})
		d.proxies[name] = p
		fmt.Fprintf(&backends, "  - {name: %s, url: %q}\n", name, p.URL())
	}
	cfg, err := vmcp.ParseConfig([]byte("name: e2e\nbackends:\n"+backends.String()+
		"timeouts: {call: 2s, initialize: 2s, list: 2s}\nhealth: {interval: 200ms, timeout: 150ms}\n"), "gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := vmcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	d.gateway = g.URL()
	d.health = strings.TrimSuffix(g.URL(), "/mcp") + "/api/backends/health"
	return d
}

// experimentFile is an experiment against d; method is the method's YAML.
func (d *deployment) experimentFile(method string) string {
	return fmt.Sprintf(`title: beta errors are named
parameters: {backend: beta, tool: beta_echo}
deployment:
  gateway: %q
  health: {url: %q}
  backends:
    - {name: alpha, control: %q}
    - {name: beta, control: %q}
safeguards: {leaseTTL: 3s, callTimeout: 5s, maxDuration: 1m}
steadyState:
  probes:
    - {name: tools listed, type: tools_listed, tools: [alpha_echo, "${tool}"], tolerance: {eventually: 5s}}
    - {name: echo answers, type: call_tool, tool: "${tool}", arguments: {text: hi}, expect: {within: 2s, contains: hi}}
    - {name: beta healthy, type: health, backend: beta, states: [healthy], tolerance: {eventually: 5s}}
method:
%s`, d.gateway, d.health, d.proxies["alpha"].AdminURL(), d.proxies["beta"].AdminURL(), method)
}

const faultMethod = `  - action:
      type: inject
      backend: ${backend}
      faults: [{kind: http_status, status: 503, match: {method: tools/call, tool: echo}}]
  - probe: {name: the error names beta, type: call_tool, tool: "${tool}", expect: {names: "${backend}", within: 2s}}
  - probe: {name: alpha unaffected, type: call_tool, tool: alpha_echo}
  - action: {type: clear, backend: "${backend}"}
`

func run(t *testing.T, ctx context.Context, src string, opts experiment.Options) (*experiment.Outcome, string) {
	t.Helper()
	e, err := experiment.Parse([]byte(src), "e.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	opts.Progress = &progress
	out := experiment.Run(ctx, e, opts)
	return out, progress.String()
}

// clean fails unless no proxy holds a fault.
func (d *deployment) clean(t *testing.T) {
	t.Helper()
	for name, p := range d.proxies {
		if n := p.Engine().Len(); n != 0 || p.Lease().Active {
			t.Errorf("proxy %s not clean: %d faults, lease %+v", name, n, p.Lease())
		}
	}
}

func checkNamed(t *testing.T, out *experiment.Outcome, name string) history.Check {
	t.Helper()
	for _, c := range out.Results.Scenarios[0].Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q in %+v", name, out.Results.Scenarios[0].Checks)
	return history.Check{}
}

func TestRunHeld(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	out, progress := run(t, t.Context(), d.experimentFile(faultMethod), experiment.Options{})
	if out.Status != experiment.StatusHeld || out.ExitCode() != 0 {
		t.Fatalf("status %s (%s), exit %d\n%s", out.Status, out.Reason, out.ExitCode(), progress)
	}
	if !strings.Contains(progress, "on beta (lease 3s, renewed every 1s)") || !strings.Contains(progress, "holds faults under leases") {
		t.Fatalf("the proxy's lease is not reported:\n%s", progress)
	}
	c := checkNamed(t, out, "method[1]: the error names beta")
	if c.Verdict != history.CheckPassed || !strings.Contains(c.Observed, "beta") || len(c.Calls) == 0 {
		t.Fatalf("named check: %+v", c)
	}
	// Probes map onto the scenarios' properties: a call that must name
	// the backend judges "names the failing backend"; the rollback is the
	// experiment running to its end.
	if c.Property != history.PropNamesBackend {
		t.Errorf("the naming probe's property: %q", c.Property)
	}
	if rb := checkNamed(t, out, "rollback: beta clean"); rb.Property != history.PropRuns {
		t.Errorf("the rollback's property: %q", rb.Property)
	}
	if sr := out.Results.Scenarios[0]; sr.Verdict != history.VerdictPassed {
		t.Fatalf("journal verdict %s", sr.Verdict)
	}
	d.clean(t)
}

func TestRunDeviationRollsBack(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	method := `  - action:
      type: inject
      backend: beta
      faults: [{kind: http_status, status: 503, match: {method: tools/call}}]
  - probe: {name: beta still answers, type: call_tool, tool: beta_echo}
  - pause: 1m
`
	start := time.Now()
	out, progress := run(t, t.Context(), d.experimentFile(method), experiment.Options{})
	if out.Status != experiment.StatusDeviated || out.ExitCode() != 1 {
		t.Fatalf("status %s (%s) exit %d\n%s", out.Status, out.Reason, out.ExitCode(), progress)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatalf("the deviation did not abort the method (took %s)", time.Since(start))
	}
	if !strings.Contains(out.Reason, "method[1]: beta still answers deviated") {
		t.Fatalf("reason %q", out.Reason)
	}
	if c := checkNamed(t, out, "rollback: beta clean"); c.Verdict != history.CheckPassed {
		t.Fatalf("rollback check %+v", c)
	}
	d.clean(t)
}

func TestRunInterruptedRollsBack(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	method := `  - action:
      type: inject
      backend: beta
      faults: [{kind: stall, match: {method: tools/call}}]
  - pause: 1m
`
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for d.proxies["beta"].Engine().Len() == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	out, progress := run(t, ctx, d.experimentFile(method), experiment.Options{})
	if out.Status != experiment.StatusInterrupted || out.ExitCode() != 130 || !out.Results.Interrupted {
		t.Fatalf("status %s (%s) exit %d\n%s", out.Status, out.Reason, out.ExitCode(), progress)
	}
	d.clean(t)
}

func TestRunDryRunAppliesNothing(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	out, progress := run(t, t.Context(), d.experimentFile(faultMethod+"  - pause: 1m\n"), experiment.Options{DryRun: true})
	if out.Status != experiment.StatusHeld {
		t.Fatalf("dry run: %s %s\n%s", out.Status, out.Reason, progress)
	}
	if !strings.Contains(progress, "method[0]: inject") || !strings.Contains(progress, "control alpha: ok") {
		t.Fatalf("plan not printed:\n%s", progress)
	}
	for _, c := range out.Results.Scenarios[0].Checks {
		if !strings.HasPrefix(c.Name, "preflight: ") {
			t.Errorf("dry run ran %q", c.Name)
		}
	}
	for _, ev := range out.Results.Scenarios[0].Events {
		if ev.Kind == history.EventFault {
			t.Errorf("dry run acted: %+v", ev.Fault)
		}
	}
	d.clean(t)
}

func TestRunUnreachableBeforeAnyFault(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	src := strings.Replace(d.experimentFile(faultMethod), d.proxies["alpha"].AdminURL(), deadURL, 1)
	out, progress := run(t, t.Context(), src, experiment.Options{})
	if out.Status != experiment.StatusAborted || out.ExitCode() != 3 || !strings.Contains(out.Reason, "before any fault: control alpha") {
		t.Fatalf("status %s (%s) exit %d\n%s", out.Status, out.Reason, out.ExitCode(), progress)
	}
	for _, c := range out.Results.Scenarios[0].Checks {
		if strings.HasPrefix(c.Name, "steady-state") || strings.HasPrefix(c.Name, "method") {
			t.Errorf("ran %q after a failed preflight", c.Name)
		}
	}
	d.clean(t)
	// An unreachable gateway, likewise.
	src = strings.Replace(d.experimentFile(faultMethod), d.gateway, deadURL+"/mcp", 1)
	out, progress = run(t, t.Context(), src, experiment.Options{})
	if out.Status != experiment.StatusAborted || !strings.Contains(out.Reason, "before any fault: gateway") {
		t.Fatalf("unreachable gateway: status %s (%s)\n%s", out.Status, out.Reason, progress)
	}
	d.clean(t)
}

// TestRunRollbackFailureIsLoud: a control API that takes faults but
// cannot clear them makes the run exit 3 with the curl line that clears
// it by hand.
func TestRunRollbackFailureIsLoud(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	set := false
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/faults":
			if set {
				fmt.Fprint(w, `{"faults": [{"kind": "stall"}]}`)
				return
			}
			fmt.Fprint(w, `{"faults": []}`)
		case r.Method == http.MethodPost && r.URL.Path == "/faults":
			set = true
			fmt.Fprint(w, `{"faults": [{"kind": "stall"}]}`)
		default:
			http.Error(w, `{"error": "disk on fire"}`, http.StatusInternalServerError)
		}
	}))
	defer stuck.Close()
	src := strings.Replace(d.experimentFile(faultMethod), d.proxies["beta"].AdminURL(), stuck.URL, 1)
	out, progress := run(t, t.Context(), src, experiment.Options{})
	if !out.RollbackFailed || out.ExitCode() != 3 {
		t.Fatalf("rollback failure not reported: %+v\n%s", out, progress)
	}
	msg := strings.Join(out.RollbackErrors, "\n")
	if !strings.Contains(msg, "ROLLBACK FAILED on beta") || !strings.Contains(msg, "curl -fsS -X DELETE '"+stuck.URL+"/faults'") {
		t.Fatalf("rollback message: %s", msg)
	}
	if !strings.Contains(progress, "ROLLBACK FAILED on beta") {
		t.Fatalf("not in progress:\n%s", progress)
	}
	// Its answer to POST /faults?ttl= shows no lease: the inject line
	// says so instead of claiming one.
	if !strings.Contains(progress, "on beta (NO lease: its control API did not take ?ttl=") || strings.Contains(progress, "on beta (lease ") ||
		!strings.Contains(progress, "no lease API: GET /lease does not answer") {
		t.Fatalf("lease not reported truthfully:\n%s", progress)
	}
}

func TestRunSafeguardsAbort(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	stall := `  - action:
      type: inject
      backend: beta
      faults: [{kind: stall, match: {method: tools/call}}]
  - pause: 1m
`
	t.Run("maxDuration", func(t *testing.T) {
		src := strings.Replace(strings.Replace(d.experimentFile(stall), "maxDuration: 1m", "maxDuration: 2s", 1), "eventually: 5s", "eventually: 1s", -1)
		start := time.Now()
		out, progress := run(t, t.Context(), src, experiment.Options{})
		if out.Status != experiment.StatusAborted || out.ExitCode() != 3 || !strings.Contains(out.Reason, "maxDuration") {
			t.Fatalf("status %s (%s) exit %d\n%s", out.Status, out.Reason, out.ExitCode(), progress)
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("maxDuration 2s took %s", time.Since(start))
		}
		d.clean(t)
	})
	t.Run("lease lost", func(t *testing.T) {
		src := strings.Replace(d.experimentFile(stall), "leaseTTL: 3s", "leaseTTL: 1s", 1)
		go func() {
			for d.proxies["beta"].Engine().Len() == 0 {
				time.Sleep(10 * time.Millisecond)
			}
			d.proxies["beta"].ClearFaults() // someone else cleared them: the lease is gone
		}()
		out, progress := run(t, t.Context(), src, experiment.Options{})
		if out.Status != experiment.StatusAborted || out.ExitCode() != 3 || !strings.Contains(out.Reason, "lease on beta is gone") {
			t.Fatalf("status %s (%s) exit %d\n%s", out.Status, out.Reason, out.ExitCode(), progress)
		}
		d.clean(t)
	})
}

// TestRunActionDuration: an injection with a duration is cleared by the
// runner while the method goes on.
func TestRunActionDuration(t *testing.T) {
	t.Parallel()
	d := startDeployment(t)
	method := `  - action:
      type: inject
      backend: beta
      duration: 3s
      faults: [{kind: http_status, status: 503, match: {method: tools/call}}]
  - probe: {name: fails during, type: call_tool, tool: beta_echo, expect: {outcome: error, names: beta}}
  - probe: {name: answers after, type: call_tool, tool: beta_echo, tolerance: {eventually: 10s}}
`
	out, progress := run(t, t.Context(), d.experimentFile(method), experiment.Options{})
	if out.Status != experiment.StatusHeld {
		t.Fatalf("status %s (%s)\n%s", out.Status, out.Reason, progress)
	}
	if !strings.Contains(progress, "duration 3s over: clear beta") {
		t.Fatalf("no timed clear:\n%s", progress)
	}
	d.clean(t)
}

// TestRunAgainstFakeBackend: a backend's control URL may be a fake
// backend's control API: faults are set under a lease (said so in the
// preflight and the inject line, truthfully) and cleared by the rollback.
func TestRunAgainstFakeBackend(t *testing.T) {
	t.Parallel()
	sc, err := fakebackends.ParseScript([]byte("name: gamma\ntools:\n  - {name: echo}\n"), "gamma.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fb, err := fakebackends.Start(t.Context(), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fb.Close() })
	cfg, err := vmcp.ParseConfig([]byte(fmt.Sprintf("name: f\nbackends:\n  - {name: gamma, url: %q}\ntimeouts: {call: 2s}\n", fb.URL())), "gw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := vmcp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(t.Context(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	src := fmt.Sprintf(`title: fake backend
deployment:
  gateway: %q
  backends: [{name: gamma, control: %q}]
steadyState:
  probes: [{type: call_tool, tool: gamma_echo}]
method:
  - action: {type: inject, backend: gamma, faults: [{kind: http_status, status: 502, match: {method: tools/call}}]}
  - probe: {type: call_tool, tool: gamma_echo, expect: {names: gamma, within: 2s}}
`, g.URL(), fb.AdminURL())
	out, progress := run(t, t.Context(), src, experiment.Options{})
	// The fault stays until the rollback: the hypothesis after deviates.
	if out.Status != experiment.StatusDeviated || !strings.Contains(out.Reason, "steady-state after") {
		t.Fatalf("status %s (%s)\n%s", out.Status, out.Reason, progress)
	}
	if !strings.Contains(progress, "on gamma (lease ") || strings.Contains(progress, "without a lease") || !strings.Contains(progress, "method[1]: call_tool gamma_echo: ok") {
		t.Fatalf("progress:\n%s", progress)
	}
	if n := len(fb.Faults()); n != 0 {
		t.Fatalf("fake backend not clean after the rollback: %d faults", n)
	}
}
