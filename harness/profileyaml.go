package harness

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// ProfileError is a target profile error located in its file:
// "FILE:LINE: FIELD: MSG".
type ProfileError struct {
	File  string
	Line  int    // 0 when not tied to a line
	Field string // path such as healthAPI.status; may be ""
	Msg   string
}

// Error renders "FILE:LINE: FIELD: MSG" (line and field left out when
// unknown).
func (e *ProfileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// strictDecoder decodes a yaml.Node tree into Go values by their yaml
// tags, strictly: unknown or repeated keys and values of the wrong kind
// are errors naming file, line and field. It records each field's line
// for later validation errors.
type strictDecoder struct {
	file  string
	lines map[string]int
}

func (d *strictDecoder) errf(n *yaml.Node, field, format string, args ...any) *ProfileError {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ProfileError{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

var durationType = reflect.TypeFor[time.Duration]()

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%s %q", strings.TrimPrefix(n.ShortTag(), "!!"), n.Value)
}

// decode decodes n into v (addressable), path naming the field.
func (d *strictDecoder) decode(n *yaml.Node, v reflect.Value, path string) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	d.lines[path] = n.Line
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		v.SetZero()
		return nil
	}
	if v.Type() == durationType {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return d.errf(n, path, "want a duration such as \"30s\", got %s", kindName(n))
		}
		dur, err := time.ParseDuration(n.Value)
		if err != nil || dur < 0 {
			return d.errf(n, path, "want a duration such as \"30s\", got %q", n.Value)
		}
		v.SetInt(int64(dur))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.decode(n, p.Elem(), path); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return d.errf(n, path, "want a string, got %s", kindName(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			return d.errf(n, path, "want true or false, got %s", kindName(n))
		}
		v.SetBool(n.Value == "true" || n.Value == "True" || n.Value == "TRUE")
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, path, "want a list, got %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errf(n, path, "want a mapping, got %s", kindName(n))
		}
		m := reflect.MakeMap(v.Type())
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return d.errf(k, path, "want string keys, got %s", kindName(k))
			}
			if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
				return d.errf(k, path+"."+k.Value, "repeated key")
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(val, e, path+"."+k.Value); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k.Value), e)
		}
		v.Set(m)
		return nil
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	}
	return d.errf(n, path, "harness: cannot decode into %s", v.Type())
}

func (d *strictDecoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "want a mapping, got %s", kindName(n))
	}
	fields := map[string]int{}
	var names []string
	for i := range v.NumField() {
		tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		fields[tag] = i
		names = append(names, tag)
	}
	slices.Sort(names)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		field := join(path, k.Value)
		idx, ok := fields[k.Value]
		if !ok {
			return d.errf(k, field, "unknown field (known: %s)", strings.Join(names, ", "))
		}
		if seen[k.Value] {
			return d.errf(k, field, "repeated key")
		}
		seen[k.Value] = true
		if err := d.decode(val, v.Field(idx), field); err != nil {
			return err
		}
	}
	return nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
