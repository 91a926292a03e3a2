package strictyaml

import (
	"fmt"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// anyPath is the lazily built field path of a value inside free-form data;
// building strings only on error keeps large values cheap to decode.
type anyPath struct {
	parent *anyPath
	root   string // set on the root only
	key    string
	index  int
	isKey  bool
}

func (p *anyPath) String() string {
	if p.parent == nil {
		return p.root
	}
	if p.isKey {
		return MapField(p.parent.String(), p.key)
	}
	return fmt.Sprintf("%s[%d]", p.parent.String(), p.index)
}

// toAny decodes free-form data (tool input schemas, JSON results and bodies)
// into JSON-compatible values: nil, bool, int64, float64 (finite), string,
// []any and map[string]any. Integral numbers become int64 so that values
// survive a JSON round trip unchanged.
func (d *Decoder) Any(n *yaml.Node, field string) (any, error) {
	return d.anyValue(n, &anyPath{root: field})
}

func (d *Decoder) anyValue(n *yaml.Node, p *anyPath) (any, error) {
	d.work++
	if d.work > maxDecodeWork || d.tooLarge(n) {
		return nil, d.Errf(n, p.String(), "document too large (more than %d values after expanding aliases)", maxDecodeWork)
	}
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		d.expanding[n] = true
		defer delete(d.expanding, n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		var x any
		err := d.alias(n, p.String(), func(t *yaml.Node) (err error) { x, err = d.anyValue(t, p); return err })
		return x, err
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, item := range n.Content {
			x, err := d.anyValue(item, &anyPath{parent: p, index: i})
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case yaml.MappingNode:
		out := make(map[string]any, len(n.Content)/2)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			k, err := d.keyText(kn, p.String)
			if err != nil {
				return nil, err
			}
			sub := &anyPath{parent: p, key: k, isKey: true}
			if first, dup := seen[k]; dup {
				return nil, d.Errf(kn, sub.String(), "duplicate key (first at line %d)", first)
			}
			seen[k] = kn.Line
			x, err := d.anyValue(vn, sub)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool":
			var b bool
			if err := n.Decode(&b); err != nil {
				return nil, d.Errf(n, p.String(), "invalid boolean %q", n.Value)
			}
			return b, nil
		case "!!int", "!!float":
			if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				return i, nil // the common case, without a YAML decoder per number
			}
			var x any
			if err := n.Decode(&x); err != nil {
				return nil, d.Errf(n, p.String(), "invalid number %q", n.Value)
			}
			return d.number(n, p, x)
		default:
			return n.Value, nil
		}
	}
	return nil, d.Errf(n, p.String(), "unexpected value")
}

// number normalizes a decoded YAML number.
func (d *Decoder) number(n *yaml.Node, p *anyPath, x any) (any, error) {
	var f float64
	switch x := x.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		f = float64(x)
	case float64:
		f = x
	default:
		return nil, d.Errf(n, p.String(), "invalid number %q", n.Value)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, d.Errf(n, p.String(), "%s is not representable in JSON", n.Value)
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}
