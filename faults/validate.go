package faults

import (
	"cmp"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Check is what a kind's Validate gets: the transport, the whole fault
// (its match and schedule) and where errors go.
type Check struct {
	Transport Transport
	// Fault is the fault being checked.
	Fault  *Fault
	field  string
	lineOf func(field string) int
	file   string
}

// Errf returns a located error on the fault's parameter param.
func (c *Check) Errf(param, format string, args ...any) error {
	f := strictyaml.JoinField(c.field, param)
	return &strictyaml.Error{File: c.file, Line: c.lineOf(f), Field: f, Msg: fmt.Sprintf(format, args...)}
}

// Nested validates a fault held in parameter param (a flap's fault).
func (c *Check) Nested(f *Fault, param string) error {
	sub := *c
	sub.field = strictyaml.JoinField(c.field, param)
	sub.Fault = f
	return sub.fault(f)
}

// Validator checks faults, locating errors in a file.
type Validator struct {
	File   string                 // file or source named in errors
	LineOf func(field string) int // line of a field path; nil: the faults' Line
}

// Validate checks one fault (kind, parameters, match and schedule) for a
// transport ("" skips the transport rules). field prefixes field names
// (e.g. "faults[2]"). Errors are *strictyaml.Error.
func (v Validator) Validate(f *Fault, field string, transport Transport) error {
	if f == nil {
		return &strictyaml.Error{File: v.File, Field: field, Msg: "missing fault"}
	}
	lineOf := v.LineOf
	if lineOf == nil {
		lineOf = func(sub string) int {
			if n := nested(f); n != nil && n.Line > 0 && strings.HasPrefix(sub, strictyaml.JoinField(field, "fault")) {
				return n.Line
			}
			return f.Line
		}
	}
	c := &Check{Transport: transport, Fault: f, field: field, lineOf: lineOf, file: v.File}
	return c.fault(f)
}

func kindList() string {
	var s []string
	for _, k := range Kinds() {
		s = append(s, string(k))
	}
	return join(s)
}

func (c *Check) fault(f *Fault) error {
	spec, ok := Lookup(f.Kind)
	if f.Kind == "" {
		return c.Errf("kind", "required (want %s)", kindList())
	}
	if !ok {
		return c.Errf("kind", "unknown fault kind %q (want %s)", f.Kind, kindList())
	}
	params := cmp.Or(f.Params, spec.New())
	if want := reflect.TypeOf(spec.New()); reflect.TypeOf(params) != want {
		return c.Errf("kind", "parameters %T do not belong to kind %s (want %v)", params, f.Kind, want)
	}
	if why, refused := spec.NotOn[c.Transport]; refused {
		return c.Errf("kind", "%s does not apply to %s (%s)", f.Kind, c.Transport, why)
	}
	if _, ok := params.(stdioActor); c.Transport == TransportStdio && !ok {
		return c.Errf("kind", "%s does not apply to stdio", f.Kind)
	}
	if err := params.Validate(c); err != nil {
		return err
	}
	if len(spec.Methods) > 0 && f.Match.Method != "" && !slices.Contains(spec.Methods, f.Match.Method) {
		return c.Errf("match.method", "%s applies only to %s, not %q", f.Kind, strings.Join(spec.Methods, ", "), f.Match.Method)
	}
	if m := f.Match.Method; m != "" && !slices.Contains(KnownMethods, m) {
		return c.Errf("match.method", "unknown method %q (want %s)", m, strings.Join(KnownMethods, ", "))
	}
	if f.Match.Tool != "" {
		if _, err := path.Match(f.Match.Tool, ""); err != nil {
			return c.Errf("match.tool", "bad glob %q: %v", f.Match.Tool, err)
		}
	}
	switch p := f.Probability; {
	case p != nil && !(*p >= 0 && *p <= 1):
		return c.Errf("probability", "must be between 0 and 1, got %v", *p)
	case f.After < 0:
		return c.Errf("after", "must not be negative")
	case f.Count < 0:
		return c.Errf("count", "must not be negative (0 = unlimited)")
	case f.At < 0:
		return c.Errf("at", "must not be negative")
	case f.For < 0:
		return c.Errf("for", "must not be negative (0 = until cleared)")
	}
	return nil
}

func paramsOf(s *Spec) string {
	if ps := ParamsOf(s); len(ps) > 0 {
		return string(s.Kind) + " takes " + strings.Join(ps, ", ")
	}
	return string(s.Kind) + " takes no parameters"
}

func join(xs []string) string { return strings.Join(xs, ", ") }

// setField returns the first of the named match and schedule fields of f
// that is set, or "".
func setField(f *Fault, names []string) string {
	set := map[string]bool{"match": f.Match != (Match{}), "after": f.After != 0, "count": f.Count != 0,
		"probability": f.Probability != nil, "seed": f.Seed != 0, "at": f.At != 0, "for": f.For != 0}
	for _, n := range names {
		if set[n] {
			return n
		}
	}
	return ""
}
