package fakebackends

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
	"go.yaml.in/yaml/v3"
)

// MarshalYAML writes `echo`, {text: ...} or {json: ...}; the zero value is null.
func (r ToolResult) MarshalYAML() (any, error) { return r.marshalValue() }

// UnmarshalYAML reads `echo`, {text: ...} or {json: ...} (exactly one).
func (r *ToolResult) UnmarshalYAML(n *yaml.Node) error {
	return strictyaml.NewDecoder("").Decode(n, r, "")
}

// MarshalJSON writes "echo", {"text": ...} or {"json": ...}; the zero value is null.
func (r ToolResult) MarshalJSON() ([]byte, error) {
	v, err := r.marshalValue()
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads "echo", {"text": ...} or {"json": ...} (exactly one).
func (r *ToolResult) UnmarshalJSON(b []byte) error { return strictyaml.UnmarshalBytes(b, r) }

// count is how many of echo, text and json are set.
func (r ToolResult) count() int {
	n := 0
	for _, set := range []bool{r.Echo, r.Text != "", r.JSON != nil} {
		if set {
			n++
		}
	}
	return n
}

func (r ToolResult) marshalValue() (any, error) {
	if r.count() > 1 {
		return nil, errors.New("tool result: more than one of echo, text, json is set")
	}
	switch {
	case r.Echo:
		return "echo", nil
	case r.Text != "":
		return map[string]any{"text": r.Text}, nil
	case r.JSON != nil:
		return map[string]any{"json": r.JSON}, nil
	}
	return nil, nil
}

// DecodeNode reads `echo`, {text: ...} or {json: ...} (strictyaml.Unmarshaler).
func (r *ToolResult) DecodeNode(d *strictyaml.Decoder, n *yaml.Node, field string) error {
	const want = `want echo, {text: "..."} or {json: ...}`
	*r = ToolResult{}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value == "echo" {
		r.Echo = true
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.Errf(n, field, "%s, got %s", want, strictyaml.Describe(n))
	}
	keys := 0
	err := d.Entries(n, field, func(k string, kn, vn *yaml.Node, sub string) error {
		keys++
		switch k {
		case "text":
			if err := d.Decode(vn, &r.Text, sub); err != nil || r.Text != "" {
				return err
			}
			return d.Errf(kn, sub, "must not be empty")
		case "json":
			x, err := d.Any(vn, sub)
			if err == nil && x == nil {
				err = d.Errf(kn, sub, "must not be null")
			}
			r.JSON = x
			return err
		}
		return d.Errf(kn, sub, "unknown field %q (%s)", k, want)
	})
	if err == nil && keys != 1 {
		*r = ToolResult{}
		return d.Errf(n, field, "%s: exactly one of text, json", want)
	}
	return err
}

// validator checks a script; faults are checked by faults.Validator.
type validator struct{ faults.Validator }

func (v *validator) errf(field, format string, args ...any) *ScriptError {
	line := 0
	if v.LineOf != nil {
		line = v.LineOf(field)
	}
	return &ScriptError{File: v.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func validHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 0 && p <= 65535
}

func (v *validator) script(s *Script) error {
	if strings.TrimSpace(s.Name) == "" {
		return v.errf("name", "required")
	}
	if err := checkName(v, "name", s.Name); err != nil {
		return err
	}
	switch s.Transport {
	case "", TransportStreamableHTTP, TransportSSE, TransportStdio:
	default:
		return v.errf("transport", "unknown transport %q (want streamable-http, sse, stdio)", s.Transport)
	}
	switch s.Protocol {
	case "", ProtocolLegacy, ProtocolModern, ProtocolAuto:
	default:
		return v.errf("protocol", "unknown protocol %q (want legacy, modern, auto)", s.Protocol)
	}
	if s.Protocol == ProtocolModern && (s.Transport == TransportSSE || s.Transport == TransportStdio) {
		return v.errf("protocol", "protocol modern (2026-07-28) is served over streamable-http only; transport %s serves legacy", s.Transport)
	}
	if s.Listen != "" && !validHostPort(s.Listen) {
		return v.errf("listen", "bad address %q (want host:port, e.g. 127.0.0.1:0)", s.Listen)
	}
	if s.Admin != "" && !validHostPort(s.Admin) {
		return v.errf("admin", "bad address %q (want host:port, e.g. 127.0.0.1:0)", s.Admin)
	}
	if err := cmp.Or(
		uniqueKeys(v, s.Tools, "tools", "name", "tool name", func(t ToolSpec) string { return t.Name }),
		uniqueKeys(v, s.Resources, "resources", "uri", "resource URI", func(r ResourceSpec) string { return r.URI }),
		uniqueKeys(v, s.ResourceTemplates, "resourceTemplates", "uriTemplate", "resource template", func(r ResourceTemplate) string { return r.URITemplate }),
		uniqueKeys(v, s.Prompts, "prompts", "name", "prompt name", func(p PromptSpec) string { return p.Name }),
	); err != nil {
		return err
	}
	for i := range s.Tools {
		t := &s.Tools[i]
		f := fmt.Sprintf("tools[%d]", i)
		if t.Input != nil {
			if typ, _ := t.Input["type"].(string); typ != "object" {
				return v.errf(f+".input.type", "a tool's input schema must have type: object")
			}
		}
		if t.Result.count() > 1 {
			return v.errf(f+".result", "exactly one of echo, text, json")
		}
		if t.Delay < 0 {
			return v.errf(f+".delay", "must not be negative")
		}
		if t.Progress < 0 {
			return v.errf(f+".progress", "must not be negative")
		}
		if t.Progress > MaxProgress {
			return v.errf(f+".progress", "%d is out of range: allowed 0 to %d", t.Progress, MaxProgress)
		}
		if t.ProgressInterval < 0 {
			return v.errf(f+".progressInterval", "must not be negative")
		}
	}
	for i, p := range s.Prompts {
		f := fmt.Sprintf("prompts[%d].arguments", i)
		if err := uniqueKeys(v, p.Arguments, f, "name", "argument", func(a PromptArg) string { return a.Name }); err != nil {
			return err
		}
	}
	for i := range s.Faults {
		if err := v.Validate(&s.Faults[i], fmt.Sprintf("faults[%d]", i), s.Transport); err != nil {
			return err
		}
	}
	return checkFaultBounds(s.Faults, func(field, format string, args ...any) error { return v.errf(field, format, args...) })
}

// uniqueKeys checks that every item of list has a non-empty key, unique in
// the list: list[i].field is "required", or a "duplicate <what> ... (also
// list[j])".
func uniqueKeys[T any](v *validator, list []T, listField, keyField, what string, key func(T) string) error {
	seen := map[string]int{}
	for i, item := range list {
		f := fmt.Sprintf("%s[%d].%s", listField, i, keyField)
		k := key(item)
		if k == "" {
			return v.errf(f, "required")
		}
		if keyField == "name" {
			if err := checkName(v, f, k); err != nil {
				return err
			}
		}
		if first, dup := seen[k]; dup {
			return v.errf(f, "duplicate %s %q (also %s[%d])", what, k, listField, first)
		}
		seen[k] = i
	}
	return nil
}
