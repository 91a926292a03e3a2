// Package strictyaml decodes YAML strictly into Go structs, for every YAML
// file vmcp-chaos reads (fake-backend scripts, the gateway config, target
// profiles, experiments). Unknown keys, duplicate keys, wrong types, bad
// durations and sizes are errors, and every error is an *Error located as
// "file:line: field: message".
//
// Fields are named by their yaml tag (else json tag, else the lower-cased
// Go name). Tag options: ",size" decodes an integer field as a Size;
// ",positive" refuses a zero or negative value given for the field (left
// out, it keeps its zero value, meaning "the default"). Fields of type
// Duration and time.Duration decode as Duration, Size as Size; types that
// implement Unmarshaler decode themselves.
//
// Anchors and aliases: an alias may reuse an anchored value (expansion is
// bounded, and an alias inside the value it names is refused); merge keys
// (<<) are refused. Exactly one document per input.
package strictyaml

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Node is a YAML node (re-exported so that users import one YAML module).
type Node = yaml.Node

// Error is the error of every decoding and validating function. Its text is
// "file:line: field: msg", for example
//
//	beta.yaml:12: faults[1].stage: unknown stall stage "sideways" (want before_headers, after_headers, after_progress, mid_body)
//
// Parts that are unknown are left out: a value validated on its own has no
// file, and a YAML syntax error has no field.
type Error struct {
	File  string // file name, or the source (e.g. "PUT /faults")
	Line  int    // 1-based line; 0 when unknown
	Field string // path of the offending field, e.g. "faults[1].match.method"; "" for syntax errors
	Msg   string
}

// Error returns "file:line: field: msg", leaving out the parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unmarshaler is implemented by types that decode themselves from a node
// (for example a value that is either a scalar or a mapping).
type Unmarshaler interface {
	DecodeNode(d *Decoder, n *Node, field string) error
}

// LineSetter is implemented by structs that remember the line they start on.
type LineSetter interface {
	SetLine(line int)
}

// Decode parses exactly one YAML (or JSON) document and decodes it strictly
// into out, a pointer. file names the input in errors; want describes the
// expected document for "empty document" errors. The returned Decoder
// knows the line of every decoded field (Decoder.LineOf).
func Decode(data []byte, file, want string, out any) (*Decoder, error) {
	d := NewDecoder(file)
	root, err := ParseDocument(data, file, want)
	if err != nil {
		return d, err
	}
	return d, d.Decode(root, out, "")
}

// Decode decodes n into out (a pointer); field is n's path for messages.
// A panic while decoding becomes an internal *Error.
func (d *Decoder) Decode(n *Node, out any, field string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{File: d.file, Msg: fmt.Sprintf("internal error while decoding: %v", r)}
		}
	}()
	return d.Value(n, reflect.ValueOf(out).Elem(), field)
}

// Document parsing.

var yamlLineRE = regexp.MustCompile(`^line (\d+): (?s)(.*)$`)

// yamlError converts an error of the YAML parser to a *Error.
func yamlError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{File: file, Msg: msg}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if l, err := strconv.Atoi(m[1]); err == nil {
			e.Line, e.Msg = l, m[2]
		}
	}
	e.Msg = cmp.Or(e.Msg, "invalid YAML")
	return e
}

// Lines counts the lines of UTF-8 YAML text as yaml.v3 numbers them: it
// breaks lines at \n, \r\n, a lone \r, and at NEL (U+0085), LS (U+2028)
// and PS (U+2029).
func Lines(data []byte) int {
	n := 1
	for _, brk := range []string{"\n", "\r", "\u0085", "\u2028", "\u2029"} {
		n += bytes.Count(data, []byte(brk))
	}
	return n - bytes.Count(data, []byte("\r\n"))
}

// clampLine bounds line to the Lines of data.
func clampLine(data []byte, line int) int {
	return min(line, Lines(data))
}

// ParseDocument parses exactly one YAML document and returns its root node.
func ParseDocument(data []byte, file, want string) (*yaml.Node, error) {
	if bytes.HasPrefix(data, []byte("\xfe\xff")) || bytes.HasPrefix(data, []byte("\xff\xfe")) {
		// yaml.v3 would read it, but every line and offset we report is
		// one of the UTF-8 text (found by vmcp/config FuzzParse).
		return nil, &Error{File: file, Line: 1, Msg: "the file is UTF-16 (it starts with a UTF-16 byte order mark): save it as UTF-8"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "empty document: want " + want}
		}
		return nil, yamlError(file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &Error{File: file, Line: clampLine(data, doc.Line), Msg: "empty document: want " + want}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		// yaml.v3 places the empty node of "---" on the line after it,
		// which may not exist (found by vmcp/config FuzzParse).
		return nil, &Error{File: file, Line: clampLine(data, root.Line), Msg: "empty document: want " + want}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		line := next.Line
		if len(next.Content) > 0 && next.Content[0].Line > 0 {
			line = next.Content[0].Line
		}
		// An empty second document ("0\r---") is placed on the line after
		// its "---", which may not exist (found by vmcp/config FuzzParse).
		return nil, &Error{File: file, Line: clampLine(data, line), Msg: "multiple YAML documents: want exactly one (remove the second document or its \"---\" separator)"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(file, err)
	}
	return root, nil
}

// ---------------------------------------------------------------------------
// Node decoding.

// maxDecodeWork bounds the nodes visited while decoding, so that aliases
// cannot blow up the decoded size ("billion laughs").
const maxDecodeWork = 1 << 20

type Decoder struct {
	file      string
	lines     map[string]int // field path -> line
	work      int
	expanding map[*yaml.Node]bool // alias targets being decoded (cycle check)
	sizes     map[*yaml.Node]int  // expandedSize memo
}

func NewDecoder(file string) *Decoder {
	return &Decoder{file: file, lines: map[string]int{}, expanding: map[*yaml.Node]bool{}, sizes: map[*yaml.Node]int{}}
}

func (d *Decoder) Errf(n *yaml.Node, field, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	}
	if line == 0 {
		line = d.LineOf(field)
	}
	return &Error{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Has reports whether field was present in the decoded input.
func (d *Decoder) Has(field string) bool {
	_, ok := d.lines[field]
	return ok
}

// LineOf returns the line recorded for field or its nearest ancestor.
func (d *Decoder) LineOf(field string) int {
	for {
		if l, ok := d.lines[field]; ok {
			return l
		}
		if field == "" {
			return 0
		}
		field = parentField(field)
	}
}

// parentField strips the last ".name" or "[index]" from a field path.
func parentField(field string) string {
	if strings.HasSuffix(field, "\"]") {
		if i := strings.LastIndex(field, "[\""); i >= 0 {
			return field[:i]
		}
	}
	if strings.HasSuffix(field, "]") {
		if i := strings.LastIndexByte(field, '['); i >= 0 {
			return field[:i]
		}
	}
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[:i]
	}
	return ""
}

func JoinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// mapField names an entry of a map: parent.key, or parent["odd key"].
func MapField(parent, key string) string {
	if plainKeyRE.MatchString(key) {
		return JoinField(parent, key)
	}
	return parent + "[" + strconv.Quote(key) + "]"
}

// Resolve follows aliases without decoding (for kind checks).
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// step counts work and records the line of field.
func (d *Decoder) step(n *yaml.Node, field string) error {
	d.work++
	if d.work > maxDecodeWork {
		return d.Errf(n, field, "document too large (more than %d values after expanding aliases)", maxDecodeWork)
	}
	if _, ok := d.lines[field]; !ok && n.Line > 0 {
		d.lines[field] = n.Line
	}
	return nil
}

// alias decodes the target of an alias node with fn, refusing cycles: a
// target that is one of the containers being decoded (d.expanding).
func (d *Decoder) alias(n *yaml.Node, field string, fn func(*yaml.Node) error) error {
	t := n.Alias
	if t == nil {
		return d.Errf(n, field, "unknown alias *%s", n.Value)
	}
	if d.expanding[t] {
		return d.Errf(n, field, "alias *%s refers to a value that contains it", n.Value)
	}
	if d.work+d.expandedSize(t) > maxDecodeWork {
		return d.Errf(n, field, "document too large (more than %d values after expanding aliases)", maxDecodeWork)
	}
	return fn(t)
}

// tooLarge reports a container of aliases and scalars that would expand
// beyond the work bound: the innermost culprit of an alias bomb, refused
// before it is expanded.
func (d *Decoder) tooLarge(n *yaml.Node) bool {
	if n.Kind != yaml.MappingNode && n.Kind != yaml.SequenceNode || d.work+d.expandedSize(n) <= maxDecodeWork {
		return false
	}
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode && c.Kind != yaml.AliasNode {
			return false
		}
	}
	return true
}

// expandedSize counts the values n stands for once its aliases are
// expanded (memoized; capped just above the work bound), so that an alias
// bomb is refused before it is expanded.
func (d *Decoder) expandedSize(n *yaml.Node) int {
	if v, ok := d.sizes[n]; ok {
		return v
	}
	d.sizes[n] = 1 // an alias cycle counts once here; decoding refuses it
	total := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		total = d.expandedSize(n.Alias)
	}
	for _, c := range n.Content {
		total = min(total+d.expandedSize(c), maxDecodeWork+1)
	}
	d.sizes[n] = total
	return total
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node is, for messages.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", v)
		case "!!int":
			return "the integer " + v
		case "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("%s %q", n.ShortTag(), v)
	}
	return "an unexpected value"
}

var (
	durationType    = reflect.TypeFor[Duration]()
	stdDurationType = reflect.TypeFor[time.Duration]()
	sizeType        = reflect.TypeFor[Size]()
	unmarshalerType = reflect.TypeFor[Unmarshaler]()
	lineSetterType  = reflect.TypeFor[LineSetter]()
)

// Value decodes n into v; field is v's path for messages. Types that
// implement Unmarshaler decode themselves; structs that implement
// LineSetter are told the line they start on.
func (d *Decoder) Value(n *yaml.Node, v reflect.Value, field string) error {
	if err := d.step(n, field); err != nil {
		return err
	}
	if n.Kind == yaml.AliasNode {
		return d.alias(n, field, func(t *yaml.Node) error { return d.Value(t, v, field) })
	}
	if isNull(n) {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	if d.tooLarge(n) {
		return d.Errf(n, field, "document too large (more than %d values after expanding aliases)", maxDecodeWork)
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if !d.expanding[n] {
			d.expanding[n] = true
			defer delete(d.expanding, n)
		}
	}
	switch v.Type() {
	case durationType, stdDurationType:
		return d.duration(n, v, field)
	case sizeType:
		return d.size(n, v, field)
	}
	if v.CanAddr() && v.Addr().Type().Implements(unmarshalerType) {
		return v.Addr().Interface().(Unmarshaler).DecodeNode(d, n, field)
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.Value(n, p.Elem(), field); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		if err := d.structure(n, v, field); err != nil {
			return err
		}
		if v.CanAddr() && v.Addr().Type().Implements(lineSetterType) {
			v.Addr().Interface().(LineSetter).SetLine(d.LineOf(field))
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.Errf(n, field, "want a list, got %s", Describe(n))
		}
		if len(n.Content) == 0 {
			v.Set(reflect.Zero(v.Type())) // [] is "none", as when omitted
			return nil
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.Value(item, s.Index(i), fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		return d.mapping(n, v, field)
	case reflect.Interface:
		x, err := d.Any(n, field)
		if err != nil {
			return err
		}
		if x == nil {
			v.Set(reflect.Zero(v.Type()))
		} else {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return d.Errf(n, field, "want a string, got %s", Describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			return d.Errf(n, field, "want true or false, got %s", Describe(n))
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			return d.Errf(n, field, "want an integer, got %s", Describe(n))
		}
		if n.Decode(&i) != nil || v.OverflowInt(i) {
			return d.Errf(n, field, "integer %s out of range", n.Value)
		}
		v.SetInt(i)
		return nil
	case reflect.Float32, reflect.Float64:
		var f float64
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil {
			return d.Errf(n, field, "want a number, got %s", Describe(n))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return d.Errf(n, field, "want a finite number, got %s", n.Value)
		}
		v.SetFloat(f)
		return nil
	}
	return d.Errf(n, field, "cannot decode into %s", v.Type())
}

// Key returns the text of a mapping key node.
func (d *Decoder) Key(k *yaml.Node, field string) (string, error) {
	if err := d.step(k, field); err != nil {
		return "", err
	}
	return d.keyText(k, func() string { return field })
}

// keyText is Key without counting work or recording lines; field is
// built only for an error.
func (d *Decoder) keyText(k *yaml.Node, field func() string) (string, error) {
	k = Resolve(k)
	if k.Kind != yaml.ScalarNode {
		return "", d.Errf(k, field(), "mapping keys must be strings, got %s", Describe(k))
	}
	if k.ShortTag() == "!!merge" {
		return "", d.Errf(k, field(), "merge keys (<<) are not supported")
	}
	return k.Value, nil
}

type structField struct {
	name  string
	index int
	size  bool // tag option ",size": an integer field decoded as a Size
	// positive: tag option ",positive": a value given must be above zero
	// (left out, the field keeps its zero value: "use the default").
	positive bool
}

// structFields lists the YAML names of a struct's decodable fields.
func structFields(t reflect.Type) []structField {
	var out []structField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(cmp.Or(f.Tag.Get("yaml"), f.Tag.Get("json")), ",")
		if name == "-" {
			continue
		}
		opts = "," + opts + ","
		out = append(out, structField{cmp.Or(name, strings.ToLower(f.Name)), i, strings.Contains(opts, ",size,"), strings.Contains(opts, ",positive,")})
	}
	return out
}

// Entries calls fn for each entry of the mapping n, in order, with the key,
// its value and the entry's field path. Keys must be unique strings (merge
// keys are refused); each key's line is recorded.
func (d *Decoder) Entries(n *Node, field string, fn func(key string, kn, vn *Node, sub string) error) error {
	if n.Kind != yaml.MappingNode {
		return d.Errf(n, field, "want a mapping, got %s", Describe(n))
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k, err := d.Key(kn, field)
		if err != nil {
			return err
		}
		sub := MapField(field, k)
		if first, dup := seen[k]; dup {
			return d.Errf(kn, sub, "duplicate key (first at line %d)", first)
		}
		seen[k] = kn.Line
		d.lines[sub] = kn.Line
		if err := fn(k, kn, vn, sub); err != nil {
			return err
		}
	}
	return nil
}

func (d *Decoder) structure(n *yaml.Node, v reflect.Value, field string) error {
	fields := structFields(v.Type())
	return d.Entries(n, field, func(k string, kn, vn *Node, sub string) error {
		for _, f := range fields {
			if f.name != k {
				continue
			}
			fv := v.Field(f.index)
			var err error
			if f.size {
				err = d.size(Resolve(vn), fv, sub)
			} else {
				err = d.Value(vn, fv, sub)
			}
			if err == nil && f.positive {
				err = d.checkPositive(vn, fv, sub)
			}
			return err
		}
		names := make([]string, len(fields))
		for j, f := range fields {
			names[j] = f.name
		}
		return d.Errf(kn, sub, "unknown field %q (want one of %s)", k, strings.Join(names, ", "))
	})
}

// checkPositive refuses a zero or negative number given for a ",positive" field.
func (d *Decoder) checkPositive(n *Node, v reflect.Value, field string) error {
	switch {
	case v.Type() == durationType || v.Type() == stdDurationType:
		if v.Int() <= 0 {
			return d.Errf(n, field, "must be positive, got %s", time.Duration(v.Int()))
		}
	case v.CanInt() && v.Int() <= 0:
		return d.Errf(n, field, "must be at least 1, got %d", v.Int())
	}
	return nil
}

func (d *Decoder) mapping(n *yaml.Node, v reflect.Value, field string) error {
	if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		v.Set(reflect.Zero(v.Type())) // {} is "none", as when omitted
		return nil
	}
	if v.Type().Key().Kind() != reflect.String {
		return d.Errf(n, field, "cannot decode into %s", v.Type())
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	err := d.Entries(n, field, func(k string, _, vn *Node, sub string) error {
		ev := reflect.New(v.Type().Elem()).Elem()
		if err := d.Value(vn, ev, sub); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), ev)
		return nil
	})
	if err == nil {
		v.Set(m)
	}
	return err
}
