package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Error is a configuration error located in a file.
type Error struct {
	File  string // may be ""
	Line  int    // 0 when the error is not tied to a line
	Field string // path such as backends[1].url; may be ""
	Msg   string
}

// Error renders "FILE:LINE: FIELD: MSG" (the file is "config" when
// unnamed; the line and the field are left out when unknown), e.g.
// `vmcp.yaml:12: backends[1].url: invalid URL "ftp://x": scheme must be http or https`.
func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("config")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// decoder walks a yaml.Node tree, remembering the file for errors.
type decoder struct {
	file string
}

func (d *decoder) errf(n *yaml.Node, field, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fieldFunc decodes the value of one key.
type fieldFunc func(value *yaml.Node, path string) error

// mapping decodes a mapping node strictly: keys must be in fields, at most
// once each.
func (d *decoder) mapping(n *yaml.Node, path string, fields map[string]fieldFunc) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "must be a mapping, got %s", kindName(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		sub := key
		if path != "" {
			sub = path + "." + key
		}
		if line, dup := seen[key]; dup {
			return d.errf(k, sub, "duplicate key (first set on line %d)", line)
		}
		seen[key] = k.Line
		fn, ok := fields[key]
		if !ok {
			return d.errf(k, sub, "unknown field %q; allowed: %s", key, strings.Join(sortedKeys(fields), ", "))
		}
		if err := fn(v, sub); err != nil {
			return err
		}
	}
	return nil
}

func sortedKeys(m map[string]fieldFunc) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	default:
		return "a document"
	}
}

func (d *decoder) str(dst *string) fieldFunc {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return d.errf(n, path, "must be a string, got %s", kindName(n))
		}
		*dst = n.Value
		return nil
	}
}

func (d *decoder) strList(dst *[]string) fieldFunc {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, path, "must be a list of strings, got %s", kindName(n))
		}
		out := make([]string, 0, len(n.Content))
		for i, item := range n.Content {
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" {
				return d.errf(item, fmt.Sprintf("%s[%d]", path, i), "must be a string, got %s", kindName(item))
			}
			out = append(out, item.Value)
		}
		*dst = out
		return nil
	}
}

func (d *decoder) strMap(dst *map[string]string) fieldFunc {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.MappingNode {
			return d.errf(n, path, "must be a mapping of strings, got %s", kindName(n))
		}
		out := map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if _, dup := out[k.Value]; dup {
				return d.errf(k, path+"."+k.Value, "duplicate key")
			}
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return d.errf(v, path+"."+k.Value, "must be a string, got %s", kindName(v))
			}
			out[k.Value] = v.Value
		}
		*dst = out
		return nil
	}
}

func (d *decoder) duration(dst *time.Duration) fieldFunc {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return d.errf(n, path, "must be a duration such as 500ms or 30s, got %s", kindName(n))
		}
		v, err := time.ParseDuration(n.Value)
		if err != nil {
			return d.errf(n, path, "invalid duration %q: write it like 500ms, 5s or 1m", n.Value)
		}
		if v <= 0 {
			return d.errf(n, path, "must be positive, got %s", n.Value)
		}
		*dst = v
		return nil
	}
}

func (d *decoder) positiveInt(dst *int) fieldFunc {
	return func(n *yaml.Node, path string) error {
		v, err := strconv.Atoi(n.Value)
		if n.Kind != yaml.ScalarNode || err != nil {
			return d.errf(n, path, "must be an integer, got %s", kindName(n))
		}
		if v <= 0 {
			return d.errf(n, path, "must be at least 1, got %d", v)
		}
		*dst = v
		return nil
	}
}

// size accepts an integer byte count or a number with a unit (KB, KiB, MB,
// MiB, GB, GiB).
func (d *decoder) size(dst *int64) fieldFunc {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			return d.errf(n, path, "must be a size such as 1048576 or 4MiB, got %s", kindName(n))
		}
		v, err := ParseSize(n.Value)
		if err != nil {
			return d.errf(n, path, "%v", err)
		}
		*dst = v
		return nil
	}
}

// ParseSize parses a positive byte count such as "1048576", "512KiB" or "4MB".
func ParseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
		{"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000},
		{"B", 1},
	}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			mult = u.mult
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			break
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("invalid size %q: write a positive byte count such as 1048576 or 4MiB", s)
	}
	return v * mult, nil
}
