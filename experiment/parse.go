package experiment

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Error is every parsing and validation error: "file:line: field:
// message" (the one located error of internal/strictyaml).
type Error = strictyaml.Error

// Load reads and parses an experiment file (see Parse).
func Load(path string, params map[string]string) (*Experiment, error) {
	data, err := boundedread.File(path, boundedread.Experiment)
	if err != nil {
		return nil, err
	}
	return Parse(data, path, params)
}

// Parse decodes an experiment strictly (unknown keys, duplicate keys,
// wrong types and bad durations are errors), substitutes its parameters
// (params override the file's; a name the file does not declare is an
// error), applies defaults and validates it. Every error is an *Error
// "file:line: field: message".
func Parse(data []byte, file string, params map[string]string) (*Experiment, error) {
	root, err := strictyaml.ParseDocument(data, file, "an experiment")
	if err != nil {
		return nil, err
	}
	v := &validator{file: file}
	if err := v.substitute(root, params); err != nil {
		return nil, err
	}
	var e Experiment
	d := strictyaml.NewDecoder(file)
	if err := d.Decode(root, &e, ""); err != nil {
		return nil, err
	}
	v.lineOf = d.LineOf
	e.applyDefaults()
	if err := v.experiment(&e); err != nil {
		return nil, err
	}
	return &e, nil
}

var paramRE = regexp.MustCompile(`\$\{([^}]*)\}`)
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// substitute replaces ${name} in every scalar of the document but the
// parameters themselves, before decoding, so that any value (a duration,
// a number, a URL) may be a parameter. Overrides replace the file's
// values; a name the file does not declare is an error.
func (v *validator) substitute(root *yaml.Node, overrides map[string]string) error {
	params := map[string]string{}
	values := map[string]*yaml.Node{} // each parameter's value node
	var paramsNode *yaml.Node
	if root.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "parameters" {
				paramsNode = root.Content[i+1]
			}
		}
	}
	if paramsNode != nil && paramsNode.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(paramsNode.Content); i += 2 {
			k, val := paramsNode.Content[i], paramsNode.Content[i+1]
			field := "parameters." + k.Value
			if !nameRE.MatchString(k.Value) {
				return &Error{File: v.file, Line: k.Line, Field: field, Msg: fmt.Sprintf("parameter name %q: use letters, digits, _ . -", k.Value)}
			}
			if val.Kind != yaml.ScalarNode {
				return &Error{File: v.file, Line: val.Line, Field: field, Msg: "want a scalar value"}
			}
			if paramRE.MatchString(val.Value) {
				return &Error{File: v.file, Line: val.Line, Field: field, Msg: fmt.Sprintf("a parameter's value may not refer to parameters (%q)", val.Value)}
			}
			params[k.Value], values[k.Value] = val.Value, val
		}
	}
	names := slices.Sorted(maps.Keys(overrides))
	for _, k := range names {
		if _, ok := params[k]; !ok {
			return &Error{File: v.file, Field: "--param " + k, Msg: fmt.Sprintf("the experiment has no parameter %q (it has %s)", k, listOr(slices.Sorted(maps.Keys(params)), "none"))}
		}
		params[k] = overrides[k]
		values[k].Value, values[k].Tag, values[k].Style = overrides[k], "!!str", yaml.DoubleQuotedStyle
	}
	var walk func(n *yaml.Node, field string) error
	walk = func(n *yaml.Node, field string) error {
		switch n.Kind {
		case yaml.ScalarNode:
			if !strings.Contains(n.Value, "${") {
				return nil
			}
			s, err := expand(n.Value, params)
			if err != nil {
				return &Error{File: v.file, Line: n.Line, Field: field, Msg: err.Error()}
			}
			// A value that is exactly one reference takes the parameter's
			// value as if written there, quoted or not: "${n}" may become
			// 3, 5s or a JSON mapping. Other values stay strings.
			whole := paramRE.FindString(n.Value) == n.Value
			n.Value = s
			if !whole && n.Style != 0 {
				return nil
			}
			var probe yaml.Node
			if yaml.Unmarshal([]byte(s), &probe) != nil || len(probe.Content) != 1 {
				n.Tag = "!!str"
				return nil
			}
			c := probe.Content[0]
			if c.Kind == yaml.ScalarNode {
				n.Tag, n.Style = c.Tag, 0
				return nil
			}
			if whole {
				line := n.Line
				*n = *c
				setLine(n, line)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n == root && n.Content[i].Value == "parameters" {
					continue
				}
				if err := walk(n.Content[i+1], strictyaml.JoinField(field, n.Content[i].Value)); err != nil {
					return err
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if err := walk(c, fmt.Sprintf("%s[%d]", field, i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(root, "")
}

func expand(s string, params map[string]string) (string, error) {
	var err error
	out := paramRE.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		val, ok := params[name]
		if !ok && err == nil {
			err = fmt.Errorf("unknown parameter ${%s} (declared: %s)", name, listOr(slices.Sorted(maps.Keys(params)), "none"))
		}
		return val
	})
	return out, err
}

func listOr(s []string, none string) string {
	if len(s) == 0 {
		return none
	}
	return strings.Join(s, ", ")
}

// applyDefaults fills in what the file left out.
func (e *Experiment) applyDefaults() {
	e.Deployment.Protocol = cmp.Or(e.Deployment.Protocol, "legacy")
	if k := e.Deployment.Kube; k != nil && k.Gateway != nil {
		k.Gateway.Path = cmp.Or(k.Gateway.Path, "/mcp")
	}
	if h := e.Deployment.Health; h != nil && len(h.Healthy) == 0 {
		h.Healthy = []string{"healthy", "degraded"}
	}
	s := &e.Safeguards
	s.MaxDuration = cmp.Or(s.MaxDuration, DefaultMaxDuration)
	s.LeaseTTL = cmp.Or(s.LeaseTTL, DefaultLeaseTTL)
	s.CallTimeout = cmp.Or(s.CallTimeout, DefaultCallTimeout)
	fix := func(p *Probe) {
		p.Timeout = cmp.Or(p.Timeout, s.CallTimeout)
		if p.Session == "" && p.Type != ProbeHealth {
			p.Session = SessionFresh
		}
		p.Tolerance.Samples = cmp.Or(p.Tolerance.Samples, 1)
		p.Tolerance.RetryEvery = cmp.Or(p.Tolerance.RetryEvery, DefaultRetryEvery)
		if p.Type == ProbeCallTool {
			if p.Expect == nil {
				p.Expect = &Expect{}
			}
			if p.Expect.Outcome == "" {
				p.Expect.Outcome = OutcomeOK
				if p.Expect.Names != "" {
					p.Expect.Outcome = OutcomeError
				}
			}
		}
	}
	for i := range e.SteadyState.Probes {
		fix(&e.SteadyState.Probes[i])
	}
	for i := range e.Method {
		if e.Method[i].Probe != nil {
			fix(e.Method[i].Probe)
		}
	}
}

// setLine puts a substituted node (and its children) on the line of the
// reference it replaced.
func setLine(n *yaml.Node, line int) {
	n.Line = line
	for _, c := range n.Content {
		setLine(c, line)
	}
}
