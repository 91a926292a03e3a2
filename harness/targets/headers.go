package targets

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// ProfileHeaders is a profile's headers section: HTTP headers the harness
// adds to its own requests to the gateway (e.g. a bearer token its health
// API needs). Each value is a template, usually {{env "VAR"}}: the value
// stays out of the profile and is never printed. All goes on every request;
// the others on one kind of request, over All's.
type ProfileHeaders struct {
	// All goes on every request: MCP, ready URL, health, session, metrics.
	All map[string]string `yaml:"all"`
	// MCP goes on MCP requests (the scenarios' clients, readiness's
	// tools/list).
	MCP map[string]string `yaml:"mcp"`
	// Ready goes on the ready URL's GET.
	Ready map[string]string `yaml:"ready"`
	// Health goes on the health API's GET.
	Health map[string]string `yaml:"health"`
	// Session goes on the session API's GET.
	Session map[string]string `yaml:"session"`
	// Metrics goes on GET /metrics.
	Metrics map[string]string `yaml:"metrics"`
}

// RequestHeaders are the rendered headers of each kind of request the
// harness makes to a gateway (All already merged into each). Values are
// secrets: never print them (String shows names only).
type RequestHeaders struct {
	MCP, Ready, Health, Session, Metrics map[string]string
}

// Names lists the header names set on any request, sorted (for messages:
// never the values).
func (h RequestHeaders) Names() []string {
	var out []string
	for _, m := range []map[string]string{h.MCP, h.Ready, h.Health, h.Session, h.Metrics} {
		for k := range m {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// String names the headers, never their values.
func (h RequestHeaders) String() string {
	return "headers " + strings.Join(h.Names(), ", ") + " (values not shown)"
}

// GoString is String: a %#v of a target never prints a secret.
func (h RequestHeaders) GoString() string { return h.String() }

// headerNameRE is an HTTP header name (RFC 9110 token).
var headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")

// kinds are the sections of ProfileHeaders by YAML key.
func (p ProfileHeaders) kinds() []struct {
	key string
	m   map[string]string
} {
	return []struct {
		key string
		m   map[string]string
	}{{"all", p.All}, {"mcp", p.MCP}, {"ready", p.Ready}, {"health", p.Health}, {"session", p.Session}, {"metrics", p.Metrics}}
}

// validate checks header names and value templates (an unset {{env}}
// variable is not an error until the target is built).
func (p ProfileHeaders) validate(errf func(field, format string, args ...any) *ProfileError) error {
	for _, k := range p.kinds() {
		for _, name := range slices.Sorted(maps.Keys(k.m)) {
			f := "headers." + k.key + "." + name
			if !headerNameRE.MatchString(name) {
				return errf(f, "%q is not an HTTP header name", name)
			}
			if _, err := renderHeader(f, k.m[name], sampleData); err != nil && !isEnvUnset(err) {
				return errf(f, "%v", err)
			}
		}
	}
	return nil
}

// renderHeader renders one header value; the error names the field,
// never the value.
func renderHeader(field, tmpl string, data TemplateData) (string, error) {
	v, err := RenderTemplate(field, tmpl, data)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", fmt.Errorf("template %s: the value has a line break or NUL (not shown)", field)
	}
	return v, nil
}

// Render renders every value with data (ProfileDir and {{env}} are what
// a header needs) and merges All into each kind.
func (p ProfileHeaders) Render(data TemplateData) (RequestHeaders, error) {
	rendered := map[string]map[string]string{}
	for _, k := range p.kinds() {
		for name, tmpl := range k.m {
			v, err := renderHeader("headers."+k.key+"."+name, tmpl, data)
			if err != nil {
				return RequestHeaders{}, err
			}
			if rendered[k.key] == nil {
				rendered[k.key] = map[string]string{}
			}
			rendered[k.key][name] = v
		}
	}
	merge := func(key string) map[string]string {
		if len(rendered["all"]) == 0 && len(rendered[key]) == 0 {
			return nil
		}
		out := maps.Clone(rendered["all"])
		if out == nil {
			out = map[string]string{}
		}
		maps.Copy(out, rendered[key])
		return out
	}
	return RequestHeaders{MCP: merge("mcp"), Ready: merge("ready"), Health: merge("health"), Session: merge("session"), Metrics: merge("metrics")}, nil
}

// HeaderTarget is a Target whose gateway wants headers on the harness's
// requests (a profile's headers).
type HeaderTarget interface {
	RequestHeaders() RequestHeaders
}

// HeadersOf returns t's request headers (zero: none).
func HeadersOf(t Target) RequestHeaders {
	if h, ok := t.(HeaderTarget); ok {
		return h.RequestHeaders()
	}
	return RequestHeaders{}
}

// RequestHeaders implements HeaderTarget (Exec.Headers).
func (e Exec) RequestHeaders() RequestHeaders { return e.Headers }
