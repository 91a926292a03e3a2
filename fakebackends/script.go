package fakebackends

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
	"go.yaml.in/yaml/v3"
)

// ScriptError is the error of every function that decodes or validates a
// script or a fault list: "file:line: field: msg", for example
//
//	beta.yaml:12: faults[1].stage: unknown stall stage "sideways" (want before_headers, after_headers, after_progress, mid_body)
//
// It is the strict YAML package's one located error type.
type ScriptError = strictyaml.Error

// LoadScript reads and parses the script file at path (see ParseScript).
// Errors name path as the file.
func LoadScript(path string) (*Script, error) {
	data, err := boundedread.File(path, boundedread.Script)
	if err != nil {
		return nil, &ScriptError{File: path, Msg: err.(*boundedread.Error).Msg()}
	}
	return ParseScript(data, path)
}

// ParseScript decodes one script from YAML or JSON, strictly (see package
// strictyaml): unknown keys, duplicate keys, wrong types, bad durations or
// sizes, unknown kinds and methods are errors. It then applies the defaults
// (see Script.ApplyDefaults) and validates the result (see
// Script.Validate). file names the input in errors. Every error is a
// *ScriptError carrying file, line and field.
func ParseScript(data []byte, file string) (*Script, error) {
	root, err := strictyaml.ParseDocument(data, file, "a script (a mapping with name, tools, faults, ...)")
	if err != nil {
		return nil, err
	}
	d := strictyaml.NewDecoder(file)
	if r := strictyaml.Resolve(root); r.Kind != yaml.MappingNode {
		return nil, d.Errf(root, "", "a script must be a mapping (name, transport, tools, faults, ...), got %s", strictyaml.Describe(r))
	}
	var sc Script
	if err := d.Decode(root, &sc, ""); err != nil {
		return nil, err
	}
	sc.ApplyDefaults()
	v := &validator{Validator: faults.Validator{File: file, LineOf: d.LineOf}}
	if err := v.script(&sc); err != nil {
		return nil, err
	}
	return &sc, nil
}

// ParseFaults decodes a fault list as the control API receives it
// (PUT /faults, POST /faults): a YAML or JSON list of faults, or a mapping
// {faults: [...]}. Decoding is as strict as ParseScript's, defaults are
// applied, and each fault is validated without regard to transport (the
// runtime calls ValidateFault with its transport). source names the input in
// errors, e.g. "PUT /faults"; fields are named faults[i]... in both forms.
// An empty list gives a non-nil empty slice.
func ParseFaults(data []byte, source string) ([]Fault, error) {
	root, err := strictyaml.ParseDocument(data, source, "a list of faults or {faults: [...]}")
	if err != nil {
		return nil, err
	}
	d := strictyaml.NewDecoder(source)
	var list struct {
		Faults []Fault `yaml:"faults"`
	}
	switch r := strictyaml.Resolve(root); r.Kind {
	case yaml.SequenceNode:
		err = d.Decode(root, &list.Faults, "faults")
	case yaml.MappingNode:
		err = d.Decode(root, &list, "")
	default:
		return nil, d.Errf(root, "", "want a list of faults or {faults: [...]}, got %s", strictyaml.Describe(r))
	}
	if err != nil {
		return nil, err
	}
	if list.Faults == nil {
		list.Faults = []Fault{}
	}
	v := faults.Validator{File: source, LineOf: d.LineOf}
	for i := range list.Faults {
		list.Faults[i].ApplyDefaults()
		if err := v.Validate(&list.Faults[i], fmt.Sprintf("faults[%d]", i), ""); err != nil {
			return nil, err
		}
	}
	if err := checkFaultBounds(list.Faults, func(field, format string, args ...any) error {
		return &ScriptError{File: source, Line: d.LineOf(field), Field: field, Msg: fmt.Sprintf(format, args...)}
	}); err != nil {
		return nil, err
	}
	return list.Faults, nil
}

// ApplyDefaults fills in the defaults of every field left empty: transport
// streamable-http, protocol auto, listen and admin 127.0.0.1:0, seed 1, tool
// result echo, tool input {type: object}, and the fault defaults (see
// Fault.ApplyDefaults). It is idempotent.
func (s *Script) ApplyDefaults() {
	s.Transport = cmp.Or(s.Transport, TransportStreamableHTTP)
	s.Protocol = cmp.Or(s.Protocol, ProtocolAuto)
	s.Listen = cmp.Or(s.Listen, "127.0.0.1:0")
	s.Admin = cmp.Or(s.Admin, "127.0.0.1:0")
	s.Seed = cmp.Or(s.Seed, 1)
	// Copies: a script copied by value shares its tools and faults with the
	// original, which the defaults must not write to.
	s.Tools = slices.Clone(s.Tools)
	s.Faults = slices.Clone(s.Faults)
	for i := range s.Tools {
		t := &s.Tools[i]
		if t.Result.count() == 0 {
			t.Result.Echo = true
		}
		if t.Input == nil {
			t.Input = map[string]any{"type": "object"}
		}
	}
	for i := range s.Faults {
		s.Faults[i] = s.Faults[i].Clone()
		s.Faults[i].ApplyDefaults()
	}
}

// Validate checks the script's rules (see the package README). Empty fields
// that have defaults are accepted. Errors are *ScriptError; without the
// source file they carry no file name, and a fault's errors carry the line
// the fault started on (Fault.Line).
func (s *Script) Validate() error { return (&validator{}).script(s) }

// ValidateFault checks one fault (kind parameters, match and schedule) as
// the runtime receives it, for example from SetFaults. field prefixes the
// field names in errors (e.g. "faults[2]"; may be empty). transport selects
// the transport-specific rules (http_status and crash stage after_headers do
// not apply to stdio); "" skips them. Errors are *ScriptError whose line is
// f.Line.
func ValidateFault(f *Fault, field string, transport Transport) error {
	return faults.Validator{}.Validate(f, field, transport)
}
