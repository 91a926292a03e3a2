package experiment

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const goodExperiment = `title: an error names ${backend}
parameters: {backend: beta, tool: beta_echo, wait: 100ms}
deployment:
  gateway: http://127.0.0.1:4483/mcp
  health: {url: "http://127.0.0.1:4483/api/backends/health"}
  backends:
    - {name: beta, control: "http://127.0.0.1:9202"}
safeguards: {leaseTTL: 5s}
steadyState:
  probes:
    - {name: listed, type: tools_listed, tools: ["${tool}"]}
method:
  - action:
      type: inject
      backend: ${backend}
      faults: [{kind: http_status, status: 503, match: {method: tools/call}}]
  - pause: ${wait}
  - probe: {name: named, type: call_tool, tool: "${tool}", expect: {names: "${backend}", within: 2s}}
  - action: {type: clear, backend: "*"}
`

func TestParseGood(t *testing.T) {
	t.Parallel()
	e, err := Parse([]byte(goodExperiment), "x.yaml", map[string]string{"backend": "beta", "tool": "beta_other"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Title != "an error names beta" || e.SteadyState.Probes[0].Tools[0] != "beta_other" {
		t.Fatalf("parameters not substituted: %q %v", e.Title, e.SteadyState.Probes[0].Tools)
	}
	p := e.Method[2].Probe
	if p.Expect.Outcome != OutcomeError || p.Timeout != DefaultCallTimeout || p.Tolerance.Samples != 1 {
		t.Fatalf("defaults: %+v %+v", p.Expect, p.Tolerance)
	}
	if e.Safeguards.LeaseTTL != 5*time.Second || e.Safeguards.MaxDuration != DefaultMaxDuration || e.Deployment.Protocol != "legacy" {
		t.Fatalf("safeguards: %+v", e.Safeguards)
	}
	if e.Method[1].Pause != 100*time.Millisecond {
		t.Fatalf("pause %v", e.Method[1].Pause)
	}
}

func TestParseBad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, edit, want string
		params           map[string]string
	}{
		{"unknown key", "title: t\ntitel: x\n", "x.yaml:2: titel: unknown field", nil},
		{"duplicate key", "title: t\ntitle: u\n", "x.yaml:2: title: duplicate key", nil},
		{"bad duration", strings.Replace(goodExperiment, "pause: ${wait}", "pause: 5 sec", 1), "x.yaml:17: method[1].pause: bad duration", nil},
		{"bare number duration", goodExperiment, "method[1].pause: want a duration such as \"250ms\", \"1.5s\" or \"2m\": a number needs a unit", map[string]string{"wait": "5"}},
		{"unknown parameter", strings.Replace(goodExperiment, `tools: ["${tool}"]`, `tools: ["${tol}"]`, 1), "x.yaml:11: steadyState.probes[0].tools[0]: unknown parameter ${tol}", nil},
		{"override of undeclared", goodExperiment, "--param nope: the experiment has no parameter", map[string]string{"nope": "x"}},
		{"unknown backend", strings.Replace(goodExperiment, "backend: ${backend}\n", "backend: gamma\n", 1), "x.yaml:15: method[0].action.backend: unknown backend \"gamma\"", nil},
		{"bad fault", strings.Replace(goodExperiment, "status: 503", "status: 5030", 1), "x.yaml:16: method[0].action.faults[0].status", nil},
		{"unknown fault kind", strings.Replace(goodExperiment, "kind: http_status, status: 503,", "kind: stal,", 1), "method[0].action.faults[0].kind", nil},
		{"not allowed host", strings.Replace(goodExperiment, "http://127.0.0.1:9202", "http://10.1.2.3:9202", 1), "x.yaml:7: deployment.backends[0].control: host \"10.1.2.3\" is not loopback and not in deployment.allowHosts", nil},
		{"allowed host", strings.Replace(strings.Replace(goodExperiment, "http://127.0.0.1:9202", "http://10.1.2.3:9202", 1), "  backends:", "  allowHosts: [10.1.2.3]\n  backends:", 1), "", nil},
		{"step with two kinds", strings.Replace(goodExperiment, "  - pause: ${wait}\n", "  - pause: ${wait}\n    probe: {type: tools_listed, tools: [x]}\n", 1), "x.yaml:17: method[1]: a step is exactly one of", nil},
		{"param of the wrong kind", strings.Replace(goodExperiment, `tools: ["${tool}"]`, `tool: x`, 1), "x.yaml:11: steadyState.probes[0].tool: tool does not apply to a tools_listed probe", nil},
		{"within not below timeout", strings.Replace(goodExperiment, "within: 2s", "within: 20s", 1), "method[2].probe.expect.within: 20s must be shorter", nil},
		{"auth from env", strings.Replace(goodExperiment, "  health:", "  authEnv: NO_SUCH_VAR_FOR_TEST\n  health:", 1), "deployment.authEnv: environment variable NO_SUCH_VAR_FOR_TEST is not set", nil},
		{"callTimeout below 1ms", strings.Replace(goodExperiment, "safeguards: {leaseTTL: 5s}", "safeguards: {leaseTTL: 5s, callTimeout: 500us}", 1), "x.yaml:8: safeguards.callTimeout: 500µs: want at least 1ms", nil},
		{"negative callTimeout", strings.Replace(goodExperiment, "safeguards: {leaseTTL: 5s}", "safeguards: {leaseTTL: 5s, callTimeout: -1s}", 1), "x.yaml:8: safeguards.callTimeout: negative duration", nil},
		{"probe timeout below 1ms", strings.Replace(goodExperiment, "within: 2s}", "within: 2s}, timeout: 10us", 1), "method[2].probe.timeout: 10µs: want at least 1ms", nil},
		{"unknown outcome", strings.Replace(goodExperiment, "expect: {names", "expect: {outcome: eror, names", 1), "method[2].probe.expect.outcome: unknown outcome \"eror\" (want ok, error, dropped, timeout or any)", nil},
		{"unknown property", strings.Replace(goodExperiment, "expect: {names", "property: fast, expect: {names", 1), "method[2].probe.property: unknown property \"fast\" (want one of names-failing-backend, ", nil},
		{"known property", strings.Replace(goodExperiment, "expect: {names", "property: breaker, expect: {names", 1), "", nil},
		{"names with dropped", strings.Replace(goodExperiment, "expect: {names", "expect: {outcome: dropped, names", 1), "method[2].probe.expect.names: an error that names a backend needs outcome error", nil},
		{"wrong type", strings.Replace(goodExperiment, "safeguards: {leaseTTL: 5s}", "safeguards: [5s]", 1), "x.yaml:8: safeguards: want a mapping", nil},
		{"no hypothesis", "title: t\ndeployment: {gateway: \"http://127.0.0.1:1/mcp\"}\nsteadyState: {probes: []}\n", "x.yaml:3: steadyState.probes: required", nil},
		{"empty", "", "x.yaml: empty document", nil},
		{"two documents", goodExperiment + "---\ntitle: b\n", "x.yaml:21: multiple YAML documents", nil},
		{"syntax", "title: [\n", "x.yaml:", nil},
		{"health probe without health url", strings.Replace(goodExperiment, "  health: {url: \"http://127.0.0.1:4483/api/backends/health\"}\n", "", 1) + "  - probe: {type: health, backend: beta, states: [healthy]}\n", "method[4].probe.type: a health probe needs deployment.health.url", nil},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.edit), "x.yaml", c.params)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestHealthKeys reads a toolhive-shaped health answer (capitalised keys)
// through the health mapping.
func TestHealthKeys(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"monitoring_enabled":true,"backends":{"beta":{"Status":"unhealthy","CircuitState":"open"}}}`)
	}))
	defer srv.Close()
	p := newProber(&Deployment{Health: &Health{URL: srv.URL, StateKey: "Status", BreakerKey: "CircuitState", Healthy: []string{"healthy"}}}, nil)
	if s := p.health(t.Context(), &Probe{Backend: "beta", States: []string{"unhealthy"}, Breaker: []string{"open"}}); !s.ok {
		t.Fatalf("toolhive health not read: %s", s.observed)
	}
	if s := p.health(t.Context(), &Probe{Backend: "beta", States: []string{"healthy"}}); s.ok {
		t.Fatalf("unhealthy accepted as healthy: %s", s.observed)
	}
	if s := p.health(t.Context(), &Probe{Backend: "gamma", States: []string{"healthy"}}); s.ok || !strings.Contains(s.observed, "not in the health answer") {
		t.Fatalf("unknown backend: %s", s.observed)
	}
}
