package experiment

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	ctlapi "github.com/vmcp-chaos/vmcp-chaos/faults/control"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

type validator struct {
	file   string
	lineOf func(field string) int
}

func (v *validator) errf(field, format string, args ...any) *Error {
	line := 0
	if v.lineOf != nil {
		line = v.lineOf(field)
	}
	return &Error{File: v.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (v *validator) experiment(e *Experiment) error {
	if strings.TrimSpace(e.Title) == "" {
		return v.errf("title", "required: name the experiment")
	}
	if err := v.deployment(&e.Deployment); err != nil {
		return err
	}
	switch s := e.Safeguards; {
	case s.LeaseTTL < time.Second || s.LeaseTTL > 10*time.Minute:
		return v.errf("safeguards.leaseTTL", "%s: want 1s to 10m", s.LeaseTTL)
	case s.MaxDuration < time.Second:
		return v.errf("safeguards.maxDuration", "%s: want at least 1s", s.MaxDuration)
	case s.CallTimeout < time.Millisecond:
		return v.errf("safeguards.callTimeout", "%s: want at least 1ms (a call needs time to be answered)", s.CallTimeout)
	case len(e.SteadyState.Probes) == 0:
		return v.errf("steadyState.probes", "required: at least one probe (the hypothesis)")
	}
	for i := range e.SteadyState.Probes {
		if err := v.probe(&e.SteadyState.Probes[i], fmt.Sprintf("steadyState.probes[%d]", i), e); err != nil {
			return err
		}
	}
	for i := range e.Method {
		if err := v.step(&e.Method[i], fmt.Sprintf("method[%d]", i), e); err != nil {
			return err
		}
	}
	return nil
}

func (v *validator) deployment(d *Deployment) error {
	// allowed checks a required URL: given (else missing is the error),
	// http(s), and loopback or in allowHosts.
	allowed := func(field, raw, missing string) error {
		if raw == "" {
			return v.errf(field, "%s", missing)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return v.errf(field, "invalid URL %q: want http(s)://host[:port]/path", raw)
		}
		if !ctlapi.IsLoopback(u.Hostname()) && !slices.Contains(d.AllowHosts, u.Hostname()) {
			return v.errf(field, "host %q is not loopback and not in deployment.allowHosts: refused (add it there to allow it)", u.Hostname())
		}
		return nil
	}
	for i, h := range d.AllowHosts {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, "/: ") {
			return v.errf(fmt.Sprintf("deployment.allowHosts[%d]", i), "want a host name or IP address, got %q", h)
		}
	}
	if err := v.kube(d); err != nil {
		return err
	}
	if d.Kube == nil || d.Kube.Gateway == nil {
		if err := allowed("deployment.gateway", d.Gateway, "required: the gateway's MCP URL (or kube.gateway: its Service)"); err != nil {
			return err
		}
	} else if d.Gateway != "" {
		return v.errf("deployment.gateway", "give the gateway's URL or deployment.kube.gateway (its Service), not both")
	}
	if err := v.env("deployment.authEnv", d.AuthEnv); err != nil {
		return err
	}
	if d.Protocol != "legacy" && d.Protocol != "modern" {
		return v.errf("deployment.protocol", "unknown protocol %q (want legacy or modern)", d.Protocol)
	}
	if d.Health != nil {
		if err := allowed("deployment.health.url", d.Health.URL, "required with health"); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for i, b := range d.Backends {
		f := fmt.Sprintf("deployment.backends[%d]", i)
		if !nameRE.MatchString(b.Name) {
			return v.errf(f+".name", "want a name of letters, digits, _ . - (got %q)", b.Name)
		}
		if seen[b.Name] {
			return v.errf(f+".name", "duplicate backend %q", b.Name)
		}
		seen[b.Name] = true
		if b.Service != "" {
			switch {
			case b.Control != "" || b.TokenEnv != "":
				return v.errf(f+".service", "give control (a proxy's control API) or service (a Service in the cluster), not both")
			case d.Kube == nil || d.Kube.Namespace == "":
				return v.errf(f+".service", "a backend named by its Service needs deployment.kube.namespace (the cluster and namespace it is in)")
			case !dnsLabelRE.MatchString(b.Service):
				return v.errf(f+".service", "%q: want a Service name (lower-case letters, digits, -)", b.Service)
			}
			continue
		}
		if err := allowed(f+".control", b.Control, "required: the control API URL of the proxy in front of "+b.Name+" (or service: its Service in deployment.kube.namespace)"); err != nil {
			return err
		}
		if err := v.env(f+".tokenEnv", b.TokenEnv); err != nil {
			return err
		}
	}
	return nil
}

// dnsLabelRE is a Kubernetes Service (and namespace) name.
var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// kube checks deployment.kube: a namespace, and a gateway Service that
// can be named.
func (v *validator) kube(d *Deployment) error {
	k := d.Kube
	if k == nil {
		return nil
	}
	if !dnsLabelRE.MatchString(k.Namespace) {
		return v.errf("deployment.kube.namespace", "%q: want a namespace name (lower-case letters, digits, -)", k.Namespace)
	}
	if g := k.Gateway; g != nil {
		switch {
		case !dnsLabelRE.MatchString(g.Service):
			return v.errf("deployment.kube.gateway.service", "%q: want the gateway's Service name (lower-case letters, digits, -)", g.Service)
		case g.Port < 0 || g.Port > 65535:
			return v.errf("deployment.kube.gateway.port", "%d: want a port number (or none: the Service's only port)", g.Port)
		case !strings.HasPrefix(g.Path, "/") || strings.ContainsAny(g.Path, "?# "):
			return v.errf("deployment.kube.gateway.path", "%q: want an absolute path such as /mcp", g.Path)
		case d.AuthEnv != "":
			return v.errf("deployment.authEnv", "a gateway reached through the API server's service proxy gets no bearer token (the Authorization header carries the cluster's credentials)")
		}
	}
	return nil
}

// env checks that a named environment variable is set (secrets come from
// the environment only).
func (v *validator) env(field, name string) error {
	if name == "" {
		return nil
	}
	val := os.Getenv(name)
	if strings.TrimSpace(val) == "" {
		return v.errf(field, "environment variable %s is not set or blank (secrets come from the environment, never from the file)", name)
	}
	redact.Secret(val) // never printed nor written
	return nil
}

func (v *validator) step(s *Step, f string, e *Experiment) error {
	n := 0
	for _, given := range []bool{s.Action != nil, s.Pause != 0, s.Probe != nil} {
		if given {
			n++
		}
	}
	if n != 1 {
		return v.errf(f, "a step is exactly one of action, pause (> 0) or probe")
	}
	switch {
	case s.Probe != nil:
		return v.probe(s.Probe, f+".probe", e)
	case s.Action != nil:
		return v.action(s.Action, f+".action", e)
	}
	return nil
}

func (v *validator) action(a *Action, f string, e *Experiment) error {
	names := make([]string, len(e.Deployment.Backends))
	for i, b := range e.Deployment.Backends {
		names[i] = b.Name
	}
	switch a.Type {
	case ActionInject:
		if !slices.Contains(names, a.Backend) {
			return v.errf(f+".backend", "unknown backend %q (deployment.backends: %s)", a.Backend, listOr(names, "none"))
		}
		if len(a.Faults) == 0 {
			return v.errf(f+".faults", "required: the faults to inject")
		}
		body, err := json.Marshal(a.Faults)
		if err != nil {
			return v.errf(f+".faults", "%v", err)
		}
		fs, err := fakebackends.ParseFaults(body, "faults")
		if err == nil {
			for i := range fs {
				if err = fakebackends.ValidateFault(&fs[i], fmt.Sprintf("faults[%d]", i), fakebackends.TransportStreamableHTTP); err != nil {
					break
				}
			}
		}
		if se, ok := err.(*fakebackends.ScriptError); ok && se.Field != "" {
			return v.errf(f+"."+se.Field, "%s", se.Msg)
		}
		if err != nil {
			return v.errf(f+".faults", "%v", err)
		}
	case ActionChaosMesh:
		return v.chaosMesh(a, f, e)
	case ActionClear:
		if a.Backend != "*" && !slices.Contains(names, a.Backend) {
			return v.errf(f+".backend", "unknown backend %q (deployment.backends: %s, or * for all)", a.Backend, listOr(names, "none"))
		}
		if len(a.Faults) > 0 || a.Duration != 0 {
			return v.errf(f, "clear takes only backend")
		}
	default:
		return v.errf(f+".type", "unknown action %q (want inject, clear or chaos_mesh)", a.Type)
	}
	return nil
}

func (v *validator) probe(p *Probe, f string, e *Experiment) error {
	if p.Name == "" {
		p.Name = strings.TrimSpace(p.Type + " " + p.Tool + p.Backend)
	}
	only := func(allowed ...string) error {
		set := map[string]bool{
			"tools": len(p.Tools) > 0, "absent": len(p.Absent) > 0, "tool": p.Tool != "", "arguments": p.Arguments != nil,
			"expect": p.Expect != nil, "backend": p.Backend != "", "states": len(p.States) > 0, "breaker": len(p.Breaker) > 0,
			"session": p.Session != "",
		}
		for _, k := range []string{"tools", "absent", "tool", "arguments", "expect", "backend", "states", "breaker", "session"} {
			if set[k] && !slices.Contains(allowed, k) {
				return v.errf(f+"."+k, "%s does not apply to a %s probe (it takes %s)", k, p.Type, strings.Join(allowed, ", "))
			}
		}
		return nil
	}
	if p.Property != "" && !history.Property(p.Property).Known() {
		var known []string
		for _, k := range history.Properties {
			known = append(known, string(k))
		}
		return v.errf(f+".property", "unknown property %q (want one of %s)", p.Property, strings.Join(known, ", "))
	}
	if p.Timeout < time.Millisecond {
		return v.errf(f+".timeout", "%s: want at least 1ms (a call needs time to be answered)", p.Timeout)
	}
	switch p.Type {
	case ProbeToolsListed:
		if err := only("tools", "absent", "session"); err != nil {
			return err
		}
		if len(p.Tools)+len(p.Absent) == 0 {
			return v.errf(f, "a tools_listed probe needs tools (patterns that must be listed) or absent (patterns that must not)")
		}
		for i, g := range append(slices.Clone(p.Tools), p.Absent...) {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				return v.errf(fmt.Sprintf("%s.tools[%d]", f, i), "bad pattern %q", g)
			}
		}
	case ProbeCallTool:
		if err := only("tool", "arguments", "expect", "session"); err != nil {
			return err
		}
		if p.Tool == "" {
			return v.errf(f+".tool", "required: the tool to call")
		}
		switch x := p.Expect; {
		case !slices.Contains([]string{OutcomeOK, OutcomeError, OutcomeDropped, OutcomeTimeout, OutcomeAny}, x.Outcome):
			return v.errf(f+".expect.outcome", "unknown outcome %q (want ok, error, dropped, timeout or any)", x.Outcome)
		case x.Names != "" && x.Outcome != OutcomeError && x.Outcome != OutcomeAny:
			return v.errf(f+".expect.names", "an error that names a backend needs outcome error (or any); a %s call names nothing", x.Outcome)
		case x.Within != 0 && x.Within >= p.Timeout:
			return v.errf(f+".expect.within", "%s must be shorter than the call's timeout %s (set timeout)", x.Within, p.Timeout)
		}
	case ProbeHealth:
		if err := only("backend", "states", "breaker"); err != nil {
			return err
		}
		switch {
		case e.Deployment.Health == nil:
			return v.errf(f+".type", "a health probe needs deployment.health.url")
		case p.Backend == "":
			return v.errf(f+".backend", "required: the backend whose health to read")
		case len(p.States)+len(p.Breaker) == 0:
			return v.errf(f, "a health probe needs states or breaker (the accepted values)")
		}
	default:
		return v.errf(f+".type", "unknown probe type %q (want tools_listed, call_tool or health)", p.Type)
	}
	if p.Type != ProbeHealth && p.Session != SessionFresh && p.Session != SessionShared {
		return v.errf(f+".session", "unknown session %q (want fresh or shared)", p.Session)
	}
	switch t := p.Tolerance; {
	case t.Samples < 1 || t.Samples > 1000:
		return v.errf(f+".tolerance.samples", "%d: want 1 to 1000", t.Samples)
	case t.MaxFailures < 0 || t.MaxFailures >= t.Samples:
		return v.errf(f+".tolerance.maxFailures", "%d: want 0 to samples-1 (%d)", t.MaxFailures, t.Samples-1)
	case t.Eventually > e.Safeguards.MaxDuration:
		return v.errf(f+".tolerance.eventually", "%s is longer than safeguards.maxDuration %s", t.Eventually, e.Safeguards.MaxDuration)
	}
	return nil
}

// chaosMeshKinds are the Chaos Mesh kinds a chaos_mesh action may create.
var chaosMeshKinds = []string{"PodChaos", "NetworkChaos"}

// chaosMesh checks a chaos_mesh action: a cluster to act on, and an object
// of a known kind with a name (its spec is Chaos Mesh's CRDs' to judge).
func (v *validator) chaosMesh(a *Action, f string, e *Experiment) error {
	if e.Deployment.Kube == nil || e.Deployment.Kube.Namespace == "" {
		return v.errf(f, "a chaos_mesh action needs deployment.kube.namespace (the cluster and namespace it acts on)")
	}
	if len(a.Faults) > 0 || a.Duration != 0 || a.Backend != "" {
		return v.errf(f, "chaos_mesh takes only object (its spec.duration bounds it)")
	}
	o := a.Object
	if o == nil {
		return v.errf(f+".object", "required: the Chaos Mesh object (apiVersion, kind, metadata.name, spec)")
	}
	if o["apiVersion"] != "chaos-mesh.org/v1alpha1" {
		return v.errf(f+".object.apiVersion", "%v: want chaos-mesh.org/v1alpha1", o["apiVersion"])
	}
	if kind, _ := o["kind"].(string); !slices.Contains(chaosMeshKinds, kind) {
		return v.errf(f+".object.kind", "%v: want one of %s", o["kind"], strings.Join(chaosMeshKinds, ", "))
	}
	meta, _ := o["metadata"].(map[string]any)
	if name, _ := meta["name"].(string); name == "" {
		return v.errf(f+".object.metadata.name", "required: the object's name")
	}
	if _, ok := o["spec"].(map[string]any); !ok {
		return v.errf(f+".object.spec", "required: the object's spec")
	}
	return nil
}
