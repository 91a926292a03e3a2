package targets

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"go.yaml.in/yaml/v3"
)

// TestShippedProfilesLoad: the profiles in profiles/ are valid and say
// what their headers say.
func TestShippedProfilesLoad(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, name, mcp, tools string
		caps                   int
	}{
		{"chaos-vmcp.yaml", "chaos-vmcp", "/mcp", "{backend}_{tool}", len(DefaultReferenceCapabilities)},
		{"toolhive-vmcp.yaml", "toolhive-vmcp", "/mcp", "{backend}_{tool}", 3},
		{"mcpproxy-go.yaml", "mcpproxy-go", "/mcp/all", "{backend}__{tool}", 0},
	} {
		p, err := LoadProfile(filepath.Join("..", "..", "profiles", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		caps, _ := p.Caps()
		if p.Name != tc.name || p.MCPPath != tc.mcp || p.ToolNames != tc.tools || len(caps) != tc.caps || !p.ReadyTools() || p.ConfigText == "" {
			t.Errorf("%s: %+v caps %s", tc.file, p, caps)
		}
		// The config template renders for a topology with every feature.
		data := sampleData
		data.Features = runtimes.Features{Health: &runtimes.HealthFeature{}, Breaker: &runtimes.BreakerFeature{FailureThreshold: 3}, Metrics: true, Optimizer: true}
		data.Backends = append(data.Backends, runtimes.BackendInfo{Name: "beta", URL: "http://127.0.0.1:2/mcp", Transport: "sse"})
		out, err := RenderTemplate("config", p.ConfigText, data)
		if err != nil || !strings.Contains(out, `"beta"`) {
			t.Errorf("%s: config renders %v:\n%s", tc.file, err, out)
		}
	}
	p, _ := LoadProfile(filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml"))
	e, err := p.Exec(func() (string, error) { return "/bin/chaos", nil })
	if err != nil || e.Command[0] != "/bin/chaos" || e.Name() != "chaos-vmcp" || e.ConfigTemplate != ChaosVMCPTemplate ||
		!e.Caps.Has(CapReinitOn404) || e.Health.Circuit != "circuitState" || e.Session.Status != "state" {
		t.Fatalf("chaos-vmcp exec %+v %v", e, err)
	}
}

// TestBadProfiles: every mistake is a *ProfileError naming file, line and
// field.
func TestBadProfiles(t *testing.T) {
	t.Parallel()
	const ok = "name: gw\ncommand: [gw, --config, \"{{.ConfigPath}}\"]\n"
	for _, tc := range []struct {
		what, yaml, want string
	}{
		{"unknown field", ok + "readyURL: x\n", "p.yaml:3: readyURL: unknown field \"readyURL\" (want one of name, command, "},
		{"unknown nested field", ok + "healthAPI:\n  path: /h\n  state: Status\n", "p.yaml:5: healthAPI.state: unknown field \"state\""},
		{"wrong type: string for a list", "name: gw\ncommand: gw serve\n", "p.yaml:2: command: want a list, got the string \"gw serve\""},
		{"wrong type: bool", ok + "ready:\n  tools: maybe\n", "p.yaml:4: ready.tools: want true or false, got the string \"maybe\""},
		{"wrong type: list for a string", ok + "mcpPath: [/mcp]\n", "p.yaml:3: mcpPath: want a string, got a list"},
		{"wrong type: duration", ok + "ready: {timeout: 10}\n", "p.yaml:3: ready.timeout: want a duration"},
		{"missing name", "command: [gw]\n", "p.yaml:1: name: required"},
		{"missing command", "name: gw\nmcpPath: /mcp\n", "p.yaml:1: command: required"},
		{"empty command", "name: gw\ncommand: []\n", "p.yaml:2: command: required"},
		{"bad JSON pointer", ok + "healthAPI:\n  backends: backends\n", "p.yaml:4: healthAPI.backends: JSON pointer \"backends\" must be empty or start with \"/\""},
		{"bad JSON pointer escape", ok + "sessionAPI:\n  path: /s/{{.SessionID}}\n  backends: /a~2b\n", "p.yaml:5: sessionAPI.backends: JSON pointer"},
		{"bad template syntax", "name: gw\ncommand: [gw, \"{{.ConfigPath\"]\n", "p.yaml:2: command[1]: template command[1]:"},
		{"bad template field", ok + "ready:\n  url: \"{{.BaseUrl}}/ready\"\n", "p.yaml:4: ready.url: template ready.url:"},
		{"bad path template", ok + "healthAPI: {path: \"/h/{{.Nope}}\"}\n", "p.yaml:3: healthAPI.path: template"},
		{"session path without the session", ok + "sessionAPI: {path: /api/sessions}\n", "p.yaml:3: sessionAPI.path: \"/api/sessions\" must use {{.SessionID}}"},
		{"bad config template", ok + "configTemplate: |\n  a: {{if}}\n  b: 1\n", "p.yaml:3: configTemplate: template"},
		{"missing config template file", ok + "configTemplate: nope.tmpl\n", "p.yaml:3: configTemplate: nope.tmpl: cannot read config template: no such file"},
		{"config template a device", ok + "configTemplate: /dev/zero\n", "p.yaml:3: configTemplate: /dev/zero: config template: not a regular file (a character device)"},
		{"name of 1 MB", "name: " + strings.Repeat("n", 1<<20) + "\ncommand: [gw]\n", "p.yaml:1: name: 1048576 bytes: want at most 256"},
		{"name with a newline and an escape", "name: \"gw\\n\\e[31m\"\ncommand: [gw]\n", `p.yaml:1: name: "gw\n\x1b[31m" holds a control character at byte 2`},
		{"command word with a NUL", "name: gw\ncommand: [\"gw\\0\"]\n", `p.yaml:2: command[0]: "gw\x00" holds a control character`},
		{"mcpPath with a space", ok + "mcpPath: \"/m cp\"\n", `p.yaml:3: mcpPath: "/m cp" holds a space`},
		{"mcpPath with a newline", ok + "mcpPath: \"/mcp\\n\"\n", `p.yaml:3: mcpPath: "/mcp\n" holds a control character`},
		{"configName with a NUL", ok + "configName: \"c\\0.yaml\"\n", `p.yaml:3: configName: "c\x00.yaml" holds a control character`},
		{"ready.timeout 1ns", ok + "ready: {timeout: 1ns}\n", "p.yaml:3: ready.timeout: 1ns: want 1s to 1h0m0s"},
		{"ready.timeout 700h", ok + "ready: {timeout: 700h}\n", "p.yaml:3: ready.timeout: 700h0m0s: want 1s to 1h0m0s"},
		{"ready.timeout negative", ok + "ready: {timeout: -1s}\n", "p.yaml:3: ready.timeout: negative duration"},
		{"toolNames with a newline", ok + "toolNames: \"{backend}_{tool}\\n\"\n", `p.yaml:3: toolNames: "{backend}_{tool}\n" holds a control character`},
		{"env with a newline", ok + "env: [\"A=b\\nc\"]\n", `p.yaml:3: env[0]: "A=b\nc" holds a control character`},
		{"health path with a tab", ok + "healthAPI: {path: \"/h\\t\"}\n", `p.yaml:3: healthAPI.path: "/h\t" holds a control character`},
		{"unknown metrics name", ok + "metrics: {vmcp_bogus_total: x_total}\n", `p.yaml:3: metrics.vmcp_bogus_total: "vmcp_bogus_total" is none of our metric names`},
		{"unknown capability", ok + "capabilities: [health-api, telepathy]\n", "p.yaml:3: capabilities[1]: unknown capability \"telepathy\""},
		{"bad tool name pattern", ok + "toolNames: \"{server}__{tool}\"\n", "p.yaml:3: toolNames: tool name pattern \"{server}__{tool}\": only {backend} and {tool} are known"},
		{"tool name pattern without tool", ok + "toolNames: \"{backend}\"\n", "p.yaml:3: toolNames:"},
		{"unknown method family", ok + "methods: [tools, sampling]\n", `p.yaml:3: methods: methods[1]: unknown method family "sampling" (want tools, resources, prompts)`},
		{"unknown backend transport", ok + "backendTransports: [streamable-http, grpc]\n", `p.yaml:3: backendTransports: backendTransports[1]: unknown transport "grpc" (want streamable-http, sse, stdio)`},
		{"distinct tool names not a bool", ok + "distinctToolNames: sometimes\n", `p.yaml:3: distinctToolNames: want true or false, got the string "sometimes"`},
		{"method family twice", ok + "methods: [tools, tools]\n", `p.yaml:3: methods: methods[1]: "tools" listed twice`},
		{"repeated key", ok + "name: again\n", "p.yaml:3: name: duplicate key (first at line 1)"},
		{"bad metric name", ok + "metrics: {vmcp_call_seconds: \"not a name\"}\n", "p.yaml:3: metrics.vmcp_call_seconds: \"vmcp_call_seconds\": \"not a name\": want Prometheus"},
		{"a histogram's series", ok + "metrics: {vmcp_call_seconds_count: \"a b\"}\n", "p.yaml:3: metrics.vmcp_call_seconds_count: \"vmcp_call_seconds_count\": \"a b\": want Prometheus"},
		{"bad env", ok + "env: [NOEQUALS]\n", "p.yaml:3: env[0]: \"NOEQUALS\": want KEY=value"},
		{"not yaml", "name: [\n", "p.yaml:"},
		{"empty", "", "p.yaml: empty document: want a target profile"},
		{"mcp path", ok + "mcpPath: mcp\n", "p.yaml:3: mcpPath: \"mcp\" must start with /"},
		{"keepalive without enabled", ok + "healthAPI:\n  keepalive:\n    failures: /ka/failures\n", "p.yaml:4: healthAPI.keepalive.enabled: required"},
		{"keepalive bad pointer", ok + "healthAPI:\n  keepalive:\n    enabled: ka/on\n", "p.yaml:5: healthAPI.keepalive.enabled: JSON pointer"},
		{"keepalive in the session API", ok + "sessionAPI:\n  path: /s/{{.SessionID}}\n  keepalive: {enabled: /on}\n", "p.yaml:5: sessionAPI.keepalive: keepalive state is read from the health API"},
		{"status value outside ours", ok + "healthAPI:\n  statusValues: {up: teleported}\n", "p.yaml:4: healthAPI.statusValues: \"up\": \"teleported\" is not one of ours: use healthy, unhealthy, degraded, unknown, unauthenticated"},
		{"circuit value outside ours", ok + "healthAPI:\n  circuitValues: {up: sideways}\n", "p.yaml:4: healthAPI.circuitValues: \"up\": \"sideways\" is not one of ours: use closed, open, half-open"},
		{"recovery over the bound", ok + "recovery: 6m\n", "p.yaml:3: recovery: 6m0s: want at most 5m0s (absent: 5s)"},
		{"recovery zero", ok + "recovery: 0s\n", "p.yaml:3: recovery: must be positive"},
		{"recovery without a unit", ok + "recovery: 40\n", "p.yaml:3: recovery: want a duration"},
		{"header name", ok + "headers:\n  all: {\"Bad Name\": x}\n", `p.yaml:4: headers.all.Bad Name: "Bad Name" is not an HTTP header name`},
		{"header template", ok + "headers:\n  health: {X-Key: \"{{.Nope}}\"}\n", "p.yaml:4: headers.health.X-Key: template headers.health.X-Key:"},
		{"headers unknown kind", ok + "headers:\n  admin: {X-Key: x}\n", "p.yaml:4: headers.admin: unknown field"},
		{"session status value is a health word", ok + "sessionAPI:\n  path: /s/{{.SessionID}}\n  statusValues: {ok: healthy}\n", "p.yaml:5: sessionAPI.statusValues: \"ok\": \"healthy\" is not one of ours: use connected, error, closed"},
	} {
		_, err := ParseProfile([]byte(tc.yaml), "p.yaml")
		var pe *ProfileError
		if err == nil || !errors.As(err, &pe) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: got %v\nwant prefix %q", tc.what, err, tc.want)
		}
	}
	// {{env "X"}} of an unset X is fine at load time (set it before a run).
	if _, err := ParseProfile([]byte("name: gw\ncommand: ['{{env \"VMCP_CHAOS_SURELY_UNSET\"}}']\n"), "p.yaml"); err != nil {
		t.Errorf("env of an unset variable at load: %v", err)
	}
}

// TestProfileDistinctToolNames: distinctToolNames reaches the exec
// target, and backend-distinct names are wanted under a prefixing
// pattern only when it is set (a pattern without {backend} always wants
// them).
func TestProfileDistinctToolNames(t *testing.T) {
	t.Parallel()
	const ok = "name: gw\ncommand: [gw]\n"
	for _, tc := range []struct {
		yaml string
		want bool
	}{
		{ok + "toolNames: \"{backend}__{tool}\"\n", false},
		{ok + "toolNames: \"{backend}__{tool}\"\ndistinctToolNames: true\n", true},
		{ok + "toolNames: \"{tool}\"\n", true},
		{ok, false},
	} {
		p, err := ParseProfile([]byte(tc.yaml), "p.yaml")
		if err != nil {
			t.Fatal(err)
		}
		e, err := p.Exec(nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := DistinctToolNamesOf(e); got != tc.want {
			t.Errorf("%q: DistinctToolNamesOf = %v, want %v", tc.yaml, got, tc.want)
		}
	}
}

// TestProfileTargetOverrides: the exec flags (and VMCP_CHAOS_* variables)
// override a profile's fields.
func TestProfileTargetOverrides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "gw.tmpl")
	if err := os.WriteFile(tmpl, []byte("listen: {{.Listen}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(prof, []byte("name: gw\ncommand: [gw, serve]\nconfigTemplate: gw.tmpl\nmcpPath: /mcp/all\n"+
		"capabilities: [health-api]\ntoolNames: \"{tool}@{backend}\"\nready: {tools: false}\nmethods: [tools, prompts]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := TargetConfig{Profile: prof}.Target(nil)
	if err != nil {
		t.Fatal(err)
	}
	e := tg.(Exec)
	if e.Name() != "gw" || e.MCPPath != "/mcp/all" || e.ConfigTemplate != "listen: {{.Listen}}\n" || !e.Caps.Has(CapHealthAPI) ||
		e.ToolNames != "{tool}@{backend}" || e.ReadyTools {
		t.Fatalf("from the profile: %+v", e)
	}
	if why := MethodsOf(e).Lacks("resources/read"); why != "the target's profile offers tools, prompts only, not resources" {
		t.Fatalf("methods [tools, prompts]: resources/read: %q", why)
	}
	if why := MethodsOf(e).Lacks("prompts/get"); why != "" {
		t.Fatalf("methods [tools, prompts]: prompts/get: %q", why)
	}
	tg, err = TargetConfig{Kind: "exec", Profile: prof, GatewayCmd: "other --x", MCPPath: "/m", Capabilities: "", CapabilitiesSet: true,
		ToolNamePattern: "{backend}.{tool}", Image: "gw:local"}.Target(nil)
	if err != nil {
		t.Fatal(err)
	}
	e = tg.(Exec)
	if e.Command[0] != "other" || e.MCPPath != "/m" || len(e.Caps) != 0 || e.Name() != "gw" || e.ToolNames != "{backend}.{tool}" || e.Image != "gw:local" {
		t.Fatalf("overridden: %+v", e)
	}
	if _, err := (TargetConfig{Profile: prof, ToolNamePattern: "{nope}"}).Target(nil); err == nil || !strings.Contains(err.Error(), "--tool-names") {
		t.Fatalf("a bad --tool-names with a profile: %v", err)
	}
	if _, err := (TargetConfig{Kind: "reference", Profile: prof}).Target(nil); err == nil || !strings.Contains(err.Error(), ProfileEnv) {
		t.Fatalf("reference with a profile: %v", err)
	}
	if _, err := (TargetConfig{Profile: filepath.Join(dir, "none.yaml")}).Target(nil); err == nil || !strings.Contains(err.Error(), "none.yaml") {
		t.Fatalf("missing profile: %v", err)
	}
	if !(TargetConfig{Profile: filepath.Join("..", "..", "profiles", "chaos-vmcp.yaml")}).NeedsChaosBinary() || (TargetConfig{Profile: prof}).NeedsChaosBinary() {
		t.Fatal("NeedsChaosBinary with a profile")
	}
}

// TestMatchTools: a backend's tool is found by its origin marker (meta or
// description) whatever the gateway calls it, else by the name pattern.
func TestMatchTools(t *testing.T) {
	t.Parallel()
	tools := []mcp.Tool{
		{Name: "echo_from_alpha", Description: "x " + history.OriginMarker("alpha", "echo")},
		{Name: "b.slow", Meta: &mcp.Meta{AdditionalFields: map[string]any{history.OriginMetaKey: "beta/slow"}}},
		{Name: "beta__echo"},
		{Name: "alpha__slow"}, // a different backend's pattern would not match it
	}
	backends := []runtimes.BackendInfo{{Name: "alpha", Tools: []string{"echo", "slow"}}, {Name: "beta", Tools: []string{"echo", "slow", "gone"}}}
	got := MatchTools(tools, backends, "{backend}__{tool}")
	want := []ToolMatch{
		{"alpha", "echo", "echo_from_alpha", "origin marker"},
		{"alpha", "slow", "alpha__slow", "name pattern"},
		{"beta", "echo", "beta__echo", "name pattern"},
		{"beta", "slow", "b.slow", "origin marker"},
		{"beta", "gone", "", ""},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("MatchTools:\n got %+v\nwant %+v", got, want)
	}
	if m := MissingTools(got); !slices.Equal(m, []string{"beta/gone"}) {
		t.Errorf("missing %v", m)
	}
	if got := MatchTools(tools, backends, ""); got[1].Exposed != "" || got[2].Exposed != "" {
		t.Errorf("default pattern {backend}_{tool} must not match {backend}__{tool} names: %+v", got)
	}
}

// TestShippedProfilesKeepGatewayRules: the example profiles render configs
// their gateways take (rules learnt by starting them, field notes
// 2026-11), for every feature set: toolhive's healthCheckTimeout is less
// than its healthCheckInterval and its telemetry names a service;
// mcpproxy-go aggregates upstream prompts, and its profile leaves out the
// resources it does not offer.
func TestShippedProfilesKeepGatewayRules(t *testing.T) {
	t.Parallel()
	sets := []runtimes.Features{{}, {Health: &runtimes.HealthFeature{}}, {Breaker: &runtimes.BreakerFeature{FailureThreshold: 3}, Metrics: true},
		{Health: &runtimes.HealthFeature{}, Breaker: &runtimes.BreakerFeature{}, Optimizer: true}, {Metrics: true}}
	render := func(file string, f runtimes.Features) string {
		t.Helper()
		p, err := LoadProfile(filepath.Join("..", "..", "profiles", file))
		if err != nil {
			t.Fatal(err)
		}
		data := sampleData
		data.Features = f
		out, err := RenderTemplate("config", p.ConfigText, data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return out
	}
	for _, f := range sets {
		var th struct {
			Operational struct {
				FailureHandling *struct {
					HealthCheckInterval string `yaml:"healthCheckInterval"`
					HealthCheckTimeout  string `yaml:"healthCheckTimeout"`
				} `yaml:"failureHandling"`
			}
			Telemetry *struct {
				ServiceName string `yaml:"serviceName"`
			}
		}
		out := render("toolhive-vmcp.yaml", f)
		if err := yaml.Unmarshal([]byte(out), &th); err != nil {
			t.Fatalf("toolhive config for %v: %v\n%s", f.Names(), err, out)
		}
		if fh := th.Operational.FailureHandling; fh != nil {
			iv, err1 := time.ParseDuration(fh.HealthCheckInterval)
			to, err2 := time.ParseDuration(fh.HealthCheckTimeout)
			if err1 != nil || err2 != nil || to >= iv {
				t.Errorf("toolhive config for %v: healthCheckTimeout %q must be less than healthCheckInterval %q", f.Names(), fh.HealthCheckTimeout, fh.HealthCheckInterval)
			}
		}
		if th.Telemetry != nil && th.Telemetry.ServiceName == "" {
			t.Errorf("toolhive config for %v: telemetry without a serviceName", f.Names())
		}
		if f.Metrics && th.Telemetry == nil {
			t.Errorf("toolhive config for %v: no telemetry though metrics are asked for", f.Names())
		}

		var mp map[string]any
		out = render("mcpproxy-go.yaml", f)
		if err := json.Unmarshal([]byte(out), &mp); err != nil {
			t.Fatalf("mcpproxy-go config: %v\n%s", err, out)
		}
		if mp["enable_prompts"] != true || mp["aggregate_upstream_prompts"] != true {
			t.Errorf("mcpproxy-go config does not aggregate upstream prompts: %s", out)
		}
	}
	p, err := LoadProfile(filepath.Join("..", "..", "profiles", "mcpproxy-go.yaml"))
	if err != nil || p.Methods.Lacks("resources/read") == "" || p.Methods.Lacks("prompts/get") != "" {
		t.Errorf("mcpproxy-go profile methods %v (%v): want tools and prompts, no resources", p.Methods, err)
	}
}

// TestProfileHeadersRecoveryAndDir: headers render from the environment
// (All merged under each kind's own), never show in the target's printed
// form, and an unset variable is an error at target build naming the
// field; recovery reaches RecoveryOf (DefaultRecovery when absent);
// {{.ProfileDir}} is the profile's absolute folder in the command, env
// and config templates.
func TestProfileHeadersRecoveryAndDir(t *testing.T) {
	t.Setenv("VMCP_CHAOS_TEST_TOKEN", "s3cret-value")
	dir := t.TempDir()
	prof := filepath.Join(dir, "gw.yaml")
	if err := os.WriteFile(prof, []byte("name: gw\ncommand: [\"{{.ProfileDir}}/wrapper.sh\", \"{{.ConfigPath}}\"]\n"+
		"configTemplate: |\n  token: {{.ProfileDir}}/token\n  listen: {{.Listen}}\nenv: [\"HOOK={{.ProfileDir}}/hook\"]\nrecovery: 40s\n"+
		"headers:\n  all: {Authorization: 'Bearer {{env \"VMCP_CHAOS_TEST_TOKEN\"}}'}\n  health: {X-Admin: admin, Authorization: other}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadProfile(prof)
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.Exec(nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.ProfileDir != dir || RecoveryOf(e) != 40*time.Second {
		t.Fatalf("ProfileDir %q (want %q), recovery %s", e.ProfileDir, dir, RecoveryOf(e))
	}
	h := HeadersOf(e)
	if h.MCP["Authorization"] != "Bearer s3cret-value" || h.Metrics["Authorization"] != "Bearer s3cret-value" ||
		h.Health["Authorization"] != "other" || h.Health["X-Admin"] != "admin" || h.Session["X-Admin"] != "" {
		t.Fatalf("headers: MCP %d, health %d entries; want all merged under each kind", len(h.MCP), len(h.Health))
	}
	for _, s := range []string{fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
		if strings.Contains(s, "s3cret") {
			t.Fatal("a printed target shows a header value")
		}
	}
	data := sampleData
	data.ProfileDir = e.ProfileDir
	for i, w := range e.Command {
		out, err := RenderTemplate("command", w, data)
		if err != nil || (i == 0 && out != filepath.Join(dir, "wrapper.sh")) {
			t.Errorf("command[%d] renders %q %v", i, out, err)
		}
	}
	if out, err := RenderTemplate("config", e.ConfigTemplate, data); err != nil || !strings.Contains(out, "token: "+dir+"/token") {
		t.Errorf("config renders %q %v", out, err)
	}
	if out, err := RenderTemplate("env", e.Env[0], data); err != nil || out != "HOOK="+dir+"/hook" {
		t.Errorf("env renders %q %v", out, err)
	}

	if RecoveryOf(Reference{}) != DefaultRecovery || RecoveryOf(Exec{}) != DefaultRecovery {
		t.Error("RecoveryOf without a declared window: want DefaultRecovery")
	}
	t.Setenv("VMCP_CHAOS_TEST_TOKEN", "")
	os.Unsetenv("VMCP_CHAOS_TEST_TOKEN")
	if _, err := p.Exec(nil); err == nil || !strings.Contains(err.Error(), "headers.all.Authorization") || !strings.Contains(err.Error(), "VMCP_CHAOS_TEST_TOKEN is not set") {
		t.Fatalf("unset token variable: %v", err)
	}
	if _, err := ParseProfile([]byte("name: gw\ncommand: [gw]\nheaders: {all: {X-Key: \"a\\nb\"}}\n"), "p.yaml"); err == nil || strings.Contains(err.Error(), "a\nb") {
		t.Fatalf("a header value with a line break: %v", err)
	}
}
