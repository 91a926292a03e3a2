package targets

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Profile is a target profile: one YAML file that describes a gateway
// under test (how to start it, where its MCP endpoint and admin APIs are,
// how it names tools, what it offers). `chaos run --profile FILE`, the
// VMCP_CHAOS_PROFILE variable of the Ginkgo suite and `chaos profile
// check FILE` read it with LoadProfile. See profiles/ and the README's
// "Judge your own gateway: writing a profile".
type Profile struct {
	// Name names the target in results and reports. Required.
	Name string `yaml:"name"`
	// Command is the gateway's argv; each word is a template
	// (TemplateData: {{.ConfigPath}}, {{.Listen}}, {{.Port}}, ...; and
	// {{env "VAR"}}). A first word "chaos" is this chaos binary. Required.
	Command []string `yaml:"command"`
	// ConfigTemplate is the gateway's config file template: a path
	// relative to the profile's directory, or the template itself when it
	// spans several lines (a YAML block scalar).
	ConfigTemplate string `yaml:"configTemplate"`
	// ConfigName is the rendered config file's name (default config.yaml).
	ConfigName string `yaml:"configName"`
	// MCPPath is the MCP endpoint's path (default /mcp).
	MCPPath string `yaml:"mcpPath"`
	// Ready says when the gateway is ready.
	Ready ProfileReady `yaml:"ready"`
	// Capabilities are what the gateway offers beyond MCP (health-api,
	// session-api, breaker, metrics, optimizer, keepalive, reinit-on-404,
	// or all). Absent or []: none.
	Capabilities []string `yaml:"capabilities"`
	// ToolNames is the pattern of exposed tool names, e.g.
	// "{backend}__{tool}" or "{tool}" (no prefix); default
	// "{backend}_{tool}". The harness finds tools by their origin marker
	// first and uses the pattern where the gateway drops it.
	ToolNames string `yaml:"toolNames"`
	// DistinctToolNames gives every fixture tool and prompt a bare name
	// of its own across backends, whatever ToolNames says: for a gateway
	// that drops a backend's tools whose bare names collide with
	// another's, even when it prefixes them.
	DistinctToolNames bool `yaml:"distinctToolNames"`
	// Methods are the MCP method families the gateway offers: tools,
	// resources, prompts. Absent: what it advertises at initialize.
	// Checks on a family it does not offer are not applicable.
	Methods Methods `yaml:"methods"`
	// BackendTransports are the backend transports the gateway takes
	// (streamable-http, sse, stdio). Absent: all. Scenario variants that
	// need another are not applicable; profile check uses one it takes.
	BackendTransports Transports `yaml:"backendTransports"`
	// HealthAPI says where the health API is and how to read it (default:
	// the reference's GET /api/backends/health).
	HealthAPI *ProfileStateAPI `yaml:"healthAPI"`
	// SessionAPI likewise for the per-session API (default GET
	// /api/sessions/{{.SessionID}}).
	SessionAPI *ProfileStateAPI `yaml:"sessionAPI"`
	// Metrics maps our metric names (e.g. vmcp_circuit_breaker_state) to
	// the gateway's.
	Metrics map[string]string `yaml:"metrics"`
	// Env is extra environment for the gateway (KEY=value; value a
	// template).
	Env []string `yaml:"env"`
	// Headers are added to the harness's own requests to the gateway
	// (MCP, ready URL, health, session, metrics); values are templates,
	// usually {{env "VAR"}}, never printed.
	Headers ProfileHeaders `yaml:"headers"`
	// Recovery is how long the gateway may take to return to steady
	// state after a backend fault (default DefaultRecovery, at most
	// MaxRecovery). `chaos profile check` measures it.
	Recovery time.Duration `yaml:"recovery,positive"`

	// File is the profile's path (set by LoadProfile).
	File string `yaml:"-"`
	// ConfigText is the config template's text (read from ConfigTemplate's
	// file, or ConfigTemplate itself when inline).
	ConfigText string `yaml:"-"`

	dec *strictyaml.Decoder
}

// ProfileReady says when a started gateway is ready for the scenarios.
type ProfileReady struct {
	// URL is a template of the URL polled until it answers below HTTP 500
	// (default {{.BaseURL}}<mcpPath>).
	URL string `yaml:"url"`
	// Tools: after URL answers, wait until tools/list through the gateway
	// shows every backend's tools (by origin marker, else by the toolNames
	// pattern). Default true.
	Tools *bool `yaml:"tools"`
	// Timeout bounds the wait (default 30s).
	Timeout time.Duration `yaml:"timeout"`
}

// ProfileStateAPI is a profile's healthAPI or sessionAPI: the fields of
// StateAPI under their YAML keys (path, backends, name, status, circuit,
// lastError, statusValues, circuitValues, keepalive). A healthAPI section
// without keepalive reports no keepalive state: the keepalive scenario then
// judges keepalive by the probes the backend receives.
type ProfileStateAPI StateAPI

// StateAPI converts the section (nil: the reference's).
func (a *ProfileStateAPI) StateAPI() StateAPI {
	if a == nil {
		return StateAPI{}
	}
	return StateAPI(*a)
}

// ProfileError is a target profile error located in its file:
// "FILE:LINE: FIELD: MSG" (the repository's one strict YAML decoder's
// error).
type ProfileError = strictyaml.Error

// LoadProfile reads and validates a target profile. Every error is a
// *ProfileError naming file, line and field.
func LoadProfile(path string) (*Profile, error) {
	data, err := boundedread.File(path, boundedread.Profile)
	if err != nil {
		return nil, &ProfileError{File: path, Msg: err.(*boundedread.Error).Msg()}
	}
	return ParseProfile(data, path)
}

// ParseProfile decodes (strictly: unknown or repeated keys and wrong types
// are errors) and validates a profile read from file (which names it in
// errors and anchors a relative configTemplate).
func ParseProfile(data []byte, file string) (*Profile, error) {
	p := &Profile{File: file}
	d, err := strictyaml.Decode(data, file, "a target profile (name, command, ...)", p)
	if err != nil {
		return nil, err
	}
	p.dec = d
	if err := p.validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// errf is a validation error at field, on its line when it was given,
// else on its parent's.
func (p *Profile) errf(field, format string, args ...any) *ProfileError {
	line := 0
	if p.dec != nil {
		line = p.dec.LineOf(field)
	}
	return &ProfileError{File: p.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// sampleData is the TemplateData templates are tried with at load time.
var sampleData = TemplateData{
	Backends: []runtimes.BackendInfo{{Name: "alpha", URL: "http://127.0.0.1:1/mcp", Transport: "streamable-http", Protocol: "auto", Tools: []string{"echo"}}},
	Host:     "127.0.0.1", Port: 4483, Listen: "127.0.0.1:4483", BaseURL: "http://127.0.0.1:4483",
	ConfigPath: "/tmp/profile-check/config.yaml", Dir: "/tmp/profile-check", ProfileDir: "/tmp/profiles", CallTimeout: "5s",
}

var (
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	envKeyRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

func (p *Profile) validate() error {
	if err := p.validateBounds(); err != nil {
		return err
	}
	if strings.TrimSpace(p.Name) == "" {
		return p.errf("name", "required: the gateway's name in results and reports")
	}
	if len(p.Command) == 0 {
		return p.errf("command", "required: the gateway's argv, e.g. [my-gateway, --config, \"{{.ConfigPath}}\", --listen, \"{{.Listen}}\"]")
	}
	for i, w := range p.Command {
		f := fmt.Sprintf("command[%d]", i)
		out, err := RenderTemplate(f, w, sampleData)
		if err != nil && !isEnvUnset(err) {
			return p.errf(f, "%v", err)
		}
		if i == 0 && err == nil && strings.TrimSpace(out) == "" {
			return p.errf(f, "the program is empty")
		}
	}
	if err := p.loadConfigTemplate(); err != nil {
		return err
	}
	if p.MCPPath != "" && !strings.HasPrefix(p.MCPPath, "/") {
		return p.errf("mcpPath", "%q must start with /", p.MCPPath)
	}
	if p.ConfigName != "" && (strings.ContainsAny(p.ConfigName, `/\`) || p.ConfigName == "." || p.ConfigName == "..") {
		return p.errf("configName", "%q must be a plain file name", p.ConfigName)
	}
	if p.Ready.URL != "" {
		out, err := RenderTemplate("ready.url", p.Ready.URL, sampleData)
		if err != nil {
			return p.errf("ready.url", "%v", err)
		}
		if u, err := url.Parse(out); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return p.errf("ready.url", "%q renders to %q, not an http URL", p.Ready.URL, out)
		}
	}
	if _, err := p.Caps(); err != nil {
		return err
	}
	if p.ToolNames != "" {
		if err := ValidateToolNamePattern(p.ToolNames); err != nil {
			return p.errf("toolNames", "%v", err)
		}
	}
	if err := p.Methods.Validate(); err != nil {
		return p.errf("methods", "%v", err)
	}
	if err := p.BackendTransports.Validate(); err != nil {
		return p.errf("backendTransports", "%v", err)
	}
	if err := p.validateAPI("healthAPI", p.HealthAPI, false); err != nil {
		return err
	}
	if err := p.validateAPI("sessionAPI", p.SessionAPI, true); err != nil {
		return err
	}
	for ours, theirs := range p.Metrics {
		if !metricNameRE.MatchString(ours) || !metricNameRE.MatchString(theirs) {
			return p.errf("metrics."+ours, "%q: %q: want Prometheus metric names", ours, theirs)
		}
	}
	for i, kv := range p.Env {
		f := fmt.Sprintf("env[%d]", i)
		if !envKeyRE.MatchString(kv) {
			return p.errf(f, "%q: want KEY=value", kv)
		}
		if _, err := RenderTemplate(f, kv, sampleData); err != nil && !isEnvUnset(err) {
			return p.errf(f, "%v", err)
		}
	}
	if err := p.Headers.validate(p.errf); err != nil {
		return err
	}
	if p.Recovery > MaxRecovery {
		return p.errf("recovery", "%s: want at most %s (absent: %s)", p.Recovery, MaxRecovery, DefaultRecovery)
	}
	return nil
}

// loadConfigTemplate reads configTemplate (a file relative to the profile
// unless it spans lines) and checks its template syntax.
func (p *Profile) loadConfigTemplate() error {
	switch {
	case p.ConfigTemplate == "":
		return nil
	case strings.Contains(p.ConfigTemplate, "\n"):
		p.ConfigText = p.ConfigTemplate
	default:
		path := p.ConfigTemplate
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(p.File), path)
		}
		data, err := boundedread.File(path, boundedread.ConfigTemplate)
		if err != nil {
			return p.errf("configTemplate", "%v", err)
		}
		p.ConfigText = string(data)
	}
	if _, err := template.New("configTemplate").Funcs(templateFuncs).Parse(p.ConfigText); err != nil {
		return p.errf("configTemplate", "%v", err)
	}
	return nil
}

func (p *Profile) validateAPI(field string, a *ProfileStateAPI, session bool) error {
	if a == nil {
		return nil
	}
	if a.Path != "" {
		out, err := RenderTemplate(field+".path", a.Path, stateAPIData{SessionID: "SESSION"})
		if err != nil {
			return p.errf(field+".path", "%v", err)
		}
		if !strings.HasPrefix(out, "/") {
			return p.errf(field+".path", "%q must start with / (it is appended to the gateway's base URL)", a.Path)
		}
		if session && !strings.Contains(out, "SESSION") {
			return p.errf(field+".path", "%q must use {{.SessionID}}", a.Path)
		}
	}
	if a.Backends != nil {
		if err := ValidateJSONPointer(*a.Backends); err != nil {
			return p.errf(field+".backends", "%v", err)
		}
	}
	if ka := a.Keepalive; ka != nil {
		if session {
			return p.errf(field+".keepalive", "keepalive state is read from the health API (healthAPI.keepalive), not the session API")
		}
		if ka.Enabled == "" {
			return p.errf(field+".keepalive.enabled", "required: a JSON pointer into a backend's entry to a boolean (e.g. /keepalive/enabled)")
		}
		for _, f := range []struct{ name, ptr string }{{"enabled", ka.Enabled}, {"failures", ka.Failures}, {"sessions", ka.Sessions}} {
			if err := ValidateJSONPointer(f.ptr); err != nil {
				return p.errf(field+".keepalive."+f.name, "%v", err)
			}
		}
	}
	statusWords := HealthStateWords
	if session {
		statusWords = SessionStateWords
	}
	for _, m := range []struct {
		name  string
		vals  map[string]string
		words []string
	}{{"statusValues", a.StatusValues, statusWords}, {"circuitValues", a.CircuitValues, CircuitStateWords}} {
		for _, from := range slices.Sorted(maps.Keys(m.vals)) {
			to := m.vals[from]
			if from == "" || to == "" {
				return p.errf(field+"."+m.name, "%q: %q: empty value", from, to)
			}
			if !slices.Contains(m.words, to) {
				return p.errf(field+"."+m.name, "%q: %q is not one of ours: use %s", from, to, strings.Join(m.words, ", "))
			}
		}
	}
	return nil
}

// Caps parses the declared capabilities.
func (p *Profile) Caps() (Capabilities, error) {
	caps := Capabilities{}
	for i, c := range p.Capabilities {
		parsed, err := ParseCapabilities(c)
		if err != nil || strings.Contains(c, ",") {
			if err == nil {
				err = errors.New("one capability per list entry")
			}
			return nil, p.errf(fmt.Sprintf("capabilities[%d]", i), "%v", err)
		}
		for _, pc := range parsed {
			if !caps.Has(pc) {
				caps = append(caps, pc)
			}
		}
	}
	return caps, nil
}

// Dir is the profile file's folder, absolute ({{.ProfileDir}}).
func (p *Profile) Dir() string {
	if p.File == "" {
		return ""
	}
	dir, err := filepath.Abs(filepath.Dir(p.File))
	if err != nil {
		return filepath.Dir(p.File)
	}
	return dir
}

// ReadyTools reports whether readiness waits for every backend's tools
// (ready.tools, default true).
func (p *Profile) ReadyTools() bool { return p.Ready.Tools == nil || *p.Ready.Tools }

// UsesChaosBinary reports whether the command runs this chaos binary (its
// first word is "chaos").
func (p *Profile) UsesChaosBinary() bool { return len(p.Command) > 0 && p.Command[0] == "chaos" }

// Exec builds the exec target the profile describes. chaosBinary is
// called when the command's first word is "chaos".
func (p *Profile) Exec(chaosBinary func() (string, error)) (Exec, error) {
	caps, err := p.Caps()
	if err != nil {
		return Exec{}, err
	}
	e := Exec{TargetName: p.Name, Profile: p.File, Command: append([]string(nil), p.Command...), ConfigTemplate: p.ConfigText,
		ConfigName: p.ConfigName, MCPPath: p.MCPPath, ReadyURL: p.Ready.URL, ReadyTimeout: p.Ready.Timeout,
		ReadyTools: p.ReadyTools(), ToolNames: p.ToolNames, DistinctToolNames: p.DistinctToolNames, Methods: p.Methods, Transports: p.BackendTransports, Caps: caps, Env: append([]string(nil), p.Env...),
		Health: p.HealthAPI.StateAPI(), Session: p.SessionAPI.StateAPI(), Metrics: p.Metrics, Recovery: p.Recovery, ProfileDir: p.Dir()}
	if e.Headers, err = p.Headers.Render(TemplateData{ProfileDir: e.ProfileDir}); err != nil {
		return Exec{}, fmt.Errorf("profile %s: %w", p.File, err)
	}
	if p.UsesChaosBinary() {
		if chaosBinary == nil {
			return Exec{}, fmt.Errorf("profile %s: command runs chaos, but no chaos binary is available", p.File)
		}
		bin, err := chaosBinary()
		if err != nil {
			return Exec{}, fmt.Errorf("profile %s: chaos binary: %w", p.File, err)
		}
		e.Command[0] = bin
	}
	return e, nil
}
