package faults

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
	"go.yaml.in/yaml/v3"
)

// plainFault is Fault without its codec methods: the kind, match and
// schedule fields alone.
type plainFault Fault

// DecodeNode decodes a fault from YAML or JSON (strictyaml.Unmarshaler):
// kind, match and schedule into the Fault, every other key into the kind's
// parameters struct. A parameter of another kind is refused naming the
// parameters this kind takes.
func (f *Fault) DecodeNode(d *strictyaml.Decoder, n *strictyaml.Node, field string) error {
	if n.Kind != yaml.MappingNode {
		return d.Errf(n, field, "want a mapping, got %s", strictyaml.Describe(n))
	}
	sched, params := *n, *n
	sched.Content, params.Content = nil, nil
	kindNode := n // the kind's value, for errors
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := strictyaml.Resolve(n.Content[i])
		if k.Kind == yaml.ScalarNode && slices.Contains(scheduleFields, k.Value) {
			sched.Content = append(sched.Content, n.Content[i], n.Content[i+1])
			if k.Value == "kind" {
				kindNode = n.Content[i+1]
			}
		} else {
			params.Content = append(params.Content, n.Content[i], n.Content[i+1])
		}
	}
	if err := d.Value(&sched, reflect.ValueOf((*plainFault)(f)).Elem(), field); err != nil {
		return err
	}
	f.Line = cmp.Or(d.LineOf(field), n.Line)
	kindField := strictyaml.JoinField(field, "kind")
	spec, ok := Lookup(f.Kind)
	switch {
	case f.Kind == "":
		return d.Errf(n, kindField, "required (want %s)", kindList())
	case !ok:
		return d.Errf(kindNode, kindField, "unknown fault kind %q (want %s)", f.Kind, kindList())
	}
	takes := ParamsOf(spec)
	for i := 0; i+1 < len(params.Content); i += 2 {
		k, err := d.Key(params.Content[i], field)
		if err != nil {
			return err
		}
		switch sub := strictyaml.JoinField(field, k); {
		case slices.Contains(takes, k):
		case slices.Contains(ParamNames(), k):
			return d.Errf(params.Content[i], sub, "%s does not apply to kind %s (%s)", k, f.Kind, paramsOf(spec))
		default:
			return d.Errf(params.Content[i], sub, "unknown field %q (want one of %s)", k, join(append(scheduleFields[:len(scheduleFields):len(scheduleFields)], takes...)))
		}
	}
	p := spec.New()
	if err := d.Value(&params, reflect.ValueOf(p).Elem(), field); err != nil {
		return err
	}
	f.Params = p
	return nil
}

// UnmarshalJSON decodes a fault strictly, as DecodeNode does.
func (f *Fault) UnmarshalJSON(b []byte) error { return strictyaml.UnmarshalBytes(b, f) }

// MarshalJSON writes the kind's parameters beside kind, match and schedule.
func (f Fault) MarshalJSON() ([]byte, error) {
	head, err := json.Marshal(plainFault(f))
	if err != nil || f.Params == nil {
		return head, err
	}
	ps, err := json.Marshal(f.Params)
	if err != nil || len(ps) <= 2 { // "{}": no parameter set
		return head, err
	}
	return append(append(head[:len(head)-1], ','), ps[1:]...), nil
}

// MarshalYAML writes the kind's parameters beside kind, match and schedule.
func (f Fault) MarshalYAML() (any, error) {
	var head, ps yaml.Node
	if err := head.Encode(plainFault(f)); err != nil {
		return nil, err
	}
	if f.Params != nil {
		if err := ps.Encode(f.Params); err != nil {
			return nil, err
		}
		head.Content = append(head.Content, ps.Content...)
	}
	return &head, nil
}

// nested returns the fault a kind holds and acts through (a flap's), or nil.
func nested(f *Fault) *Fault {
	if p, ok := f.Params.(phased); ok {
		return p.Nested()
	}
	return nil
}

// Effective returns the fault that acts: a flap's nested fault, or f.
func (f *Fault) Effective() *Fault {
	if n := nested(f); n != nil {
		return n
	}
	return f
}

// Clone returns a copy of f that shares no parameters struct with it (a
// flap's nested fault is copied too), so that defaults applied to the copy,
// as an engine does, never write to the caller's fault.
func (f Fault) Clone() Fault {
	if f.Params == nil || reflect.ValueOf(f.Params).IsNil() {
		return f
	}
	v := reflect.New(reflect.TypeOf(f.Params).Elem())
	v.Elem().Set(reflect.ValueOf(f.Params).Elem())
	f.Params = v.Interface().(Params)
	if p, ok := f.Params.(*Flap); ok && p.Fault != nil {
		n := p.Fault.Clone()
		p.Fault = &n
	}
	return f
}
