package experiment

// STOPGAP: a small strict YAML decoder until internal/strictyaml lands on
// main; then Parse uses strictyaml.Decode and this file goes.

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Error is a located decoding or validation error: "file:line: field: msg".
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

type shimDecoder struct {
	file  string
	lines map[string]int
}

func decodeStrict(data []byte, file string, out any, prepare func(root *yaml.Node) error) (*shimDecoder, error) {
	d := &shimDecoder{file: file, lines: map[string]int{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	if err := dec.Decode(&doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if _, rest, ok := strings.Cut(msg, "line "); ok {
			if n, err := strconv.Atoi(strings.SplitN(rest, ":", 2)[0]); err == nil {
				line = n
				msg = strings.TrimSpace(strings.SplitN(rest, ":", 2)[1])
			}
		}
		if err.Error() == "EOF" {
			msg = "empty document (want an experiment)"
		}
		return d, &Error{File: file, Line: line, Msg: msg}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return d, &Error{File: file, Line: extra.Line, Msg: "a second document: want exactly one"}
	}
	if len(doc.Content) == 0 {
		return d, &Error{File: file, Msg: "empty document (want an experiment)"}
	}
	if prepare != nil {
		if err := prepare(doc.Content[0]); err != nil {
			return d, err
		}
	}
	return d, d.value(doc.Content[0], reflect.ValueOf(out).Elem(), "")
}

func (d *shimDecoder) lineOf(field string) int {
	for {
		if l, ok := d.lines[field]; ok {
			return l
		}
		if field == "" {
			return 0
		}
		i := strings.LastIndexAny(field, ".[")
		if i < 0 {
			field = ""
		} else {
			field = field[:i]
		}
	}
}

func (d *shimDecoder) errf(n *yaml.Node, field, format string, args ...any) *Error {
	return &Error{File: d.file, Line: n.Line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

var durationType = reflect.TypeOf(time.Duration(0))

func (d *shimDecoder) value(n *yaml.Node, v reflect.Value, field string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.lines[field] = n.Line
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if v.Type() == durationType {
		if n.Kind != yaml.ScalarNode {
			return d.errf(n, field, "want a duration such as \"250ms\", \"1.5s\" or \"2m\", got %s", kindName(n))
		}
		if n.Value == "0" {
			v.SetInt(0)
			return nil
		}
		dur, err := time.ParseDuration(n.Value)
		if err != nil || n.Tag != "!!str" {
			return d.errf(n, field, "bad duration %q (want a duration such as \"250ms\", \"1.5s\" or \"2m\")", n.Value)
		}
		if dur < 0 {
			return d.errf(n, field, "negative duration %q", n.Value)
		}
		v.SetInt(int64(dur))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		nv := reflect.New(v.Type().Elem())
		if err := d.value(n, nv.Elem(), field); err != nil {
			return err
		}
		v.Set(nv)
		return nil
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			return d.errf(n, field, "%v", err)
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return d.errf(n, field, "want a string, got %s", kindName(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Int:
		i, err := strconv.Atoi(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			return d.errf(n, field, "want an integer, got %s", describe(n))
		}
		v.SetInt(int64(i))
		return nil
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return d.errf(n, field, "want true or false, got %s", describe(n))
		}
		v.SetBool(n.Value == "true")
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, field, "want a list, got %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			if err := d.value(c, s.Index(i), fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errf(n, field, "want a mapping, got %s", kindName(n))
		}
		m := reflect.MakeMap(v.Type())
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			sub := join(field, k)
			if m.MapIndex(reflect.ValueOf(k)).IsValid() {
				return d.errf(n.Content[i], sub, "duplicate key %q", k)
			}
			ev := reflect.New(v.Type().Elem()).Elem()
			if err := d.value(n.Content[i+1], ev, sub); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k), ev)
		}
		v.Set(m)
		return nil
	case reflect.Struct:
		return d.structValue(n, v, field)
	}
	return d.errf(n, field, "internal: cannot decode into %s", v.Type())
}

func (d *shimDecoder) structValue(n *yaml.Node, v reflect.Value, field string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, field, "want a mapping, got %s", kindName(n))
	}
	fields := map[string]int{}
	var names []string
	for i := 0; i < v.NumField(); i++ {
		tag := strings.Split(v.Type().Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "-" {
			if v.Type().Field(i).Name == "Line" {
				v.Field(i).SetInt(int64(n.Line))
			}
			continue
		}
		if tag != "" {
			fields[tag] = i
			names = append(names, tag)
		}
	}
	sort.Strings(names)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i].Value
		sub := join(field, k)
		idx, ok := fields[k]
		if !ok {
			return d.errf(n.Content[i], sub, "unknown field %q (want %s)", k, strings.Join(names, ", "))
		}
		if seen[k] {
			return d.errf(n.Content[i], sub, "duplicate key %q", k)
		}
		seen[k] = true
		d.lines[sub] = n.Content[i].Line
		if err := d.value(n.Content[i+1], v.Field(idx), sub); err != nil {
			return err
		}
		d.lines[sub] = n.Content[i].Line
	}
	return nil
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return describe(n)
}

func describe(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return strconv.Quote(n.Value)
	}
	return kindName(n)
}
