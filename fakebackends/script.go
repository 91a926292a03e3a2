package fakebackends

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net"
	"os"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// ScriptError is the error of every function that decodes or validates a
// script or a fault list. Its text is "file:line: field: msg", for example
//
//	beta.yaml:12: faults[1].stage: unknown stall stage "sideways" (want before_headers, after_headers, after_progress, mid_body)
//
// Parts that are unknown are left out: a fault validated on its own has no
// file ("faults[0].status: ..."), and a YAML syntax error has no field.
type ScriptError struct {
	File  string // file name, or the source passed to ParseFaults (e.g. "PUT /faults")
	Line  int    // 1-based line; 0 when unknown
	Field string // path of the offending field, e.g. "faults[1].match.method"; "" for syntax errors
	Msg   string
}

// Error returns "file:line: field: msg", leaving out the parts that are unknown.
func (e *ScriptError) Error() string {
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

// KnownMethods are the JSON-RPC methods a fault's match.method may name.
var KnownMethods = []string{
	"initialize",
	"notifications/initialized",
	"ping",
	"tools/list",
	"tools/call",
	"resources/list",
	"resources/read",
	"resources/templates/list",
	"prompts/list",
	"prompts/get",
	"server/discover",
	"notifications/cancelled",
	"completion/complete",
	"logging/setLevel",
}

// Fault kinds in documentation order, for messages.
var faultKinds = []FaultKind{
	KindCrash, KindHTTPStatus, KindStall, KindLatency, KindJSONRPCError,
	KindToolError, KindMalformed, KindSessionExpire, KindFlap,
}

// LoadScript reads and parses the script file at path (see ParseScript).
// Errors name path as the file.
func LoadScript(path string) (*Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &ScriptError{File: path, Msg: "cannot read script: " + err.Error()}
	}
	return ParseScript(data, path)
}

// ParseScript decodes one script from YAML or JSON, strictly: unknown keys,
// duplicate keys, wrong types, bad durations or sizes, unknown kinds and
// methods are errors. It then applies the defaults (see Script.ApplyDefaults)
// and validates the result (see Script.Validate). file names the input in
// errors. Every error is a *ScriptError carrying file, line and field.
func ParseScript(data []byte, file string) (s *Script, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, &ScriptError{File: file, Msg: fmt.Sprintf("internal error while decoding: %v", r)}
		}
	}()
	root, err := parseDocument(data, file, "a script (a mapping with name, tools, faults, ...)")
	if err != nil {
		return nil, err
	}
	d := newDecoder(file)
	if r := resolveAliasShallow(root); r.Kind != yaml.MappingNode {
		return nil, d.errf(root, "", "a script must be a mapping (name, transport, tools, faults, ...), got %s", describe(r))
	}
	var sc Script
	if err := d.value(root, reflect.ValueOf(&sc).Elem(), ""); err != nil {
		return nil, err
	}
	sc.ApplyDefaults()
	v := &validator{file: file, lineOf: d.lineOf}
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
func ParseFaults(data []byte, source string) (faults []Fault, err error) {
	defer func() {
		if r := recover(); r != nil {
			faults, err = nil, &ScriptError{File: source, Msg: fmt.Sprintf("internal error while decoding: %v", r)}
		}
	}()
	root, err := parseDocument(data, source, "a list of faults or {faults: [...]}")
	if err != nil {
		return nil, err
	}
	d := newDecoder(source)
	switch resolveAliasShallow(root).Kind {
	case yaml.SequenceNode:
		d.lines["faults"] = root.Line
		if err := d.value(root, reflect.ValueOf(&faults).Elem(), "faults"); err != nil {
			return nil, err
		}
	case yaml.MappingNode:
		var list struct {
			Faults []Fault `yaml:"faults"`
		}
		if err := d.value(root, reflect.ValueOf(&list).Elem(), ""); err != nil {
			return nil, err
		}
		faults = list.Faults
	default:
		return nil, d.errf(root, "", "want a list of faults or {faults: [...]}, got %s", describe(resolveAliasShallow(root)))
	}
	if faults == nil {
		faults = []Fault{}
	}
	v := &validator{file: source, lineOf: d.lineOf}
	for i := range faults {
		faults[i].ApplyDefaults()
		if err := v.fault(&faults[i], fmt.Sprintf("faults[%d]", i), ""); err != nil {
			return nil, err
		}
	}
	return faults, nil
}

// ApplyDefaults fills in the defaults of every field left empty: transport
// streamable-http, protocol auto, listen and admin 127.0.0.1:0, seed 1, tool
// result echo, tool input {type: object}, and the fault defaults (see
// Fault.ApplyDefaults). It is idempotent.
func (s *Script) ApplyDefaults() {
	if s.Transport == "" {
		s.Transport = TransportStreamableHTTP
	}
	if s.Protocol == "" {
		s.Protocol = ProtocolAuto
	}
	if s.Listen == "" {
		s.Listen = "127.0.0.1:0"
	}
	if s.Admin == "" {
		s.Admin = "127.0.0.1:0"
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	for i := range s.Tools {
		t := &s.Tools[i]
		if t.Result.isZero() {
			t.Result.Echo = true
		}
		if t.Input == nil {
			t.Input = map[string]any{"type": "object"}
		}
	}
	for i := range s.Faults {
		s.Faults[i].ApplyDefaults()
	}
}

// ApplyDefaults fills in a fault's defaults: crash mode eof, crash stage
// before_headers (not for mode down), exitCode 1 when exit is set, stall
// stage before_headers, and progress 1 for an after_progress stall. A flap's
// nested fault gets its defaults too. It is idempotent.
func (f *Fault) ApplyDefaults() {
	switch f.Kind {
	case KindCrash:
		if f.Mode == "" {
			f.Mode = CrashEOF
		}
		if f.Mode != CrashDown && f.Stage == "" {
			f.Stage = StageBeforeHeaders
		}
		if f.Exit && f.ExitCode == 0 {
			f.ExitCode = 1
		}
	case KindStall:
		if f.Stage == "" {
			f.Stage = StageBeforeHeaders
		}
		if f.Stage == StageAfterProgress && f.Progress == 0 {
			f.Progress = 1
		}
	case KindFlap:
		if f.Fault != nil {
			f.Fault.ApplyDefaults()
		}
	}
}

// Validate checks the script's rules (see the package README). Empty fields
// that have defaults are accepted. Errors are *ScriptError; without the
// source file they carry no file name, and a fault's errors carry the line
// the fault started on (Fault.Line).
func (s *Script) Validate() error {
	v := &validator{lineOf: func(field string) int { return scriptFaultLine(s, field) }}
	return v.script(s)
}

// ValidateFault checks one fault (kind parameters, match and schedule) as
// the runtime receives it, for example from SetFaults. field prefixes the
// field names in errors (e.g. "faults[2]"; may be empty). transport selects
// the transport-specific rules (http_status and crash stage after_headers do
// not apply to stdio); "" skips them. Errors are *ScriptError whose line is
// f.Line.
func ValidateFault(f *Fault, field string, transport Transport) error {
	if f == nil {
		return &ScriptError{Field: field, Msg: "missing fault"}
	}
	v := &validator{lineOf: func(sub string) int { return faultLine(f, field, sub) }}
	return v.fault(f, field, transport)
}

// scriptFaultLine gives the line for a field path from the faults' Line
// fields, or 0.
func scriptFaultLine(s *Script, field string) int {
	var i int
	if _, err := fmt.Sscanf(field, "faults[%d]", &i); err != nil || i < 0 || i >= len(s.Faults) {
		return 0
	}
	return faultLine(&s.Faults[i], fmt.Sprintf("faults[%d]", i), field)
}

func faultLine(f *Fault, root, field string) int {
	if f.Fault != nil && f.Fault.Line > 0 && strings.HasPrefix(field, joinField(root, "fault")) {
		return f.Fault.Line
	}
	return f.Line
}

// ---------------------------------------------------------------------------
// Custom (un)marshalling of Duration, Size and ToolResult.

// MarshalYAML writes the duration as a Go duration string ("250ms").
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads a duration string ("250ms", "1.5s") or the integer 0.
// Negative durations are an error.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error { return unmarshalNode(n, d) }

// MarshalJSON writes the duration as a JSON string ("250ms").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a duration string or the number 0.
func (d *Duration) UnmarshalJSON(b []byte) error { return unmarshalBytes(b, d) }

// MarshalYAML writes the size as an integer byte count.
func (s Size) MarshalYAML() (any, error) { return int64(s), nil }

// UnmarshalYAML reads an integer byte count or a string with a unit: B, KB,
// MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024), e.g. "2MiB".
func (s *Size) UnmarshalYAML(n *yaml.Node) error { return unmarshalNode(n, s) }

// MarshalJSON writes the size as a JSON integer byte count.
func (s Size) MarshalJSON() ([]byte, error) { return []byte(strconv.FormatInt(int64(s), 10)), nil }

// UnmarshalJSON reads a byte count or a string with a unit (see UnmarshalYAML).
func (s *Size) UnmarshalJSON(b []byte) error { return unmarshalBytes(b, s) }

// MarshalYAML writes `echo`, {text: ...} or {json: ...}; the zero value is null.
func (r ToolResult) MarshalYAML() (any, error) { return r.marshalValue() }

// UnmarshalYAML reads `echo`, {text: ...} or {json: ...} (exactly one).
func (r *ToolResult) UnmarshalYAML(n *yaml.Node) error { return unmarshalNode(n, r) }

// MarshalJSON writes "echo", {"text": ...} or {"json": ...}; the zero value is null.
func (r ToolResult) MarshalJSON() ([]byte, error) {
	v, err := r.marshalValue()
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads "echo", {"text": ...} or {"json": ...} (exactly one).
func (r *ToolResult) UnmarshalJSON(b []byte) error { return unmarshalBytes(b, r) }

func (r ToolResult) isZero() bool { return !r.Echo && r.Text == "" && r.JSON == nil }

func (r ToolResult) count() int {
	n := 0
	if r.Echo {
		n++
	}
	if r.Text != "" {
		n++
	}
	if r.JSON != nil {
		n++
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

func unmarshalNode(n *yaml.Node, out any) error {
	if n == nil {
		return nil
	}
	d := newDecoder("")
	return d.value(n, reflect.ValueOf(out).Elem(), "")
}

func unmarshalBytes(b []byte, out any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return yamlError("", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return &ScriptError{Msg: "empty value"}
	}
	return unmarshalNode(doc.Content[0], out)
}

// ---------------------------------------------------------------------------
// Document parsing.

var yamlLineRE = regexp.MustCompile(`^line (\d+): (?s)(.*)$`)

// yamlError converts an error of the YAML parser to a *ScriptError.
func yamlError(file string, err error) *ScriptError {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &ScriptError{File: file, Msg: msg}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		if l, err := strconv.Atoi(m[1]); err == nil {
			e.Line, e.Msg = l, m[2]
		}
	}
	if e.Msg == "" {
		e.Msg = "invalid YAML"
	}
	return e
}

// parseDocument parses exactly one YAML document and returns its root node.
func parseDocument(data []byte, file, want string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ScriptError{File: file, Msg: "empty document: want " + want}
		}
		return nil, yamlError(file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, &ScriptError{File: file, Line: doc.Line, Msg: "empty document: want " + want}
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return nil, &ScriptError{File: file, Line: root.Line, Msg: "empty document: want " + want}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		line := next.Line
		if len(next.Content) > 0 && next.Content[0].Line > 0 {
			line = next.Content[0].Line
		}
		return nil, &ScriptError{File: file, Line: line, Msg: "multiple YAML documents: want exactly one (remove the second document or its \"---\" separator)"}
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

type decoder struct {
	file      string
	lines     map[string]int // field path -> line
	work      int
	expanding map[*yaml.Node]bool // alias targets being decoded (cycle check)
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: map[string]int{}, expanding: map[*yaml.Node]bool{}}
}

func (d *decoder) errf(n *yaml.Node, field, format string, args ...any) *ScriptError {
	line := 0
	if n != nil {
		line = n.Line
	}
	if line == 0 {
		line = d.lineOf(field)
	}
	return &ScriptError{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// lineOf returns the line recorded for field or its nearest ancestor.
func (d *decoder) lineOf(field string) int {
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

func joinField(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// mapField names an entry of a map: parent.key, or parent["odd key"].
func mapField(parent, key string) string {
	if plainKeyRE.MatchString(key) {
		return joinField(parent, key)
	}
	return parent + "[" + strconv.Quote(key) + "]"
}

// resolveAliasShallow follows aliases without decoding (for kind checks).
func resolveAliasShallow(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// step counts work and records the line of field.
func (d *decoder) step(n *yaml.Node, field string) error {
	d.work++
	if d.work > maxDecodeWork {
		return d.errf(n, field, "document too large (more than %d values after expanding aliases)", maxDecodeWork)
	}
	if _, ok := d.lines[field]; !ok && n.Line > 0 {
		d.lines[field] = n.Line
	}
	return nil
}

// alias decodes the target of an alias node with fn, refusing cycles: a
// target that is one of the containers being decoded (d.expanding).
func (d *decoder) alias(n *yaml.Node, field string, fn func(*yaml.Node) error) error {
	t := n.Alias
	if t == nil {
		return d.errf(n, field, "unknown alias *%s", n.Value)
	}
	if d.expanding[t] {
		return d.errf(n, field, "alias *%s refers to a value that contains it", n.Value)
	}
	return fn(t)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// describe names what a node is, for messages.
func describe(n *yaml.Node) string {
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
	durationType   = reflect.TypeFor[Duration]()
	sizeType       = reflect.TypeFor[Size]()
	toolResultType = reflect.TypeFor[ToolResult]()
	faultType      = reflect.TypeFor[Fault]()
)

// value decodes n into v; field is v's path for messages.
func (d *decoder) value(n *yaml.Node, v reflect.Value, field string) error {
	if err := d.step(n, field); err != nil {
		return err
	}
	if n.Kind == yaml.AliasNode {
		return d.alias(n, field, func(t *yaml.Node) error { return d.value(t, v, field) })
	}
	if isNull(n) {
		v.Set(reflect.Zero(v.Type()))
		return nil
	}
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		if !d.expanding[n] {
			d.expanding[n] = true
			defer delete(d.expanding, n)
		}
	}
	switch v.Type() {
	case durationType:
		x, err := d.duration(n, field)
		if err != nil {
			return err
		}
		v.SetInt(int64(x))
		return nil
	case sizeType:
		x, err := d.size(n, field)
		if err != nil {
			return err
		}
		v.SetInt(int64(x))
		return nil
	case toolResultType:
		x, err := d.toolResult(n, field)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(x))
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if err := d.value(n, p.Elem(), field); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		if err := d.structure(n, v, field); err != nil {
			return err
		}
		if v.Type() == faultType {
			v.FieldByName("Line").SetInt(int64(d.lineOf(field)))
		}
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, field, "want a list, got %s", describe(n))
		}
		if len(n.Content) == 0 {
			v.Set(reflect.Zero(v.Type())) // [] is "none", as when omitted
			return nil
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", field, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		return d.mapping(n, v, field)
	case reflect.Interface:
		x, err := d.toAny(n, field)
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
			return d.errf(n, field, "want a string, got %s", describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			return d.errf(n, field, "want true or false, got %s", describe(n))
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			return d.errf(n, field, "want an integer, got %s", describe(n))
		}
		if n.Decode(&i) != nil || v.OverflowInt(i) {
			return d.errf(n, field, "integer %s out of range", n.Value)
		}
		v.SetInt(i)
		return nil
	case reflect.Float32, reflect.Float64:
		var f float64
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil {
			return d.errf(n, field, "want a number, got %s", describe(n))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return d.errf(n, field, "want a finite number, got %s", n.Value)
		}
		v.SetFloat(f)
		return nil
	}
	return d.errf(n, field, "cannot decode into %s", v.Type())
}

// key returns the text of a mapping key node.
func (d *decoder) key(k *yaml.Node, field string) (string, error) {
	if err := d.step(k, field); err != nil {
		return "", err
	}
	k = resolveAliasShallow(k)
	if k.Kind != yaml.ScalarNode {
		return "", d.errf(k, field, "mapping keys must be strings, got %s", describe(k))
	}
	if k.ShortTag() == "!!merge" {
		return "", d.errf(k, field, "merge keys (<<) are not supported")
	}
	return k.Value, nil
}

type structField struct {
	name  string
	index int
}

// structFields lists the YAML names of a struct's decodable fields.
func structFields(t reflect.Type) []structField {
	var out []structField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, structField{name, i})
	}
	return out
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, field string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, field, "want a mapping, got %s", describe(n))
	}
	fields := structFields(v.Type())
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k, err := d.key(kn, field)
		if err != nil {
			return err
		}
		sub := mapField(field, k)
		if first, dup := seen[k]; dup {
			return d.errf(kn, sub, "duplicate key (first at line %d)", first)
		}
		seen[k] = kn.Line
		idx := -1
		for _, f := range fields {
			if f.name == k {
				idx = f.index
				break
			}
		}
		if idx < 0 {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.name
			}
			return d.errf(kn, sub, "unknown field %q (want one of %s)", k, strings.Join(names, ", "))
		}
		d.lines[sub] = kn.Line
		if err := d.value(vn, v.Field(idx), sub); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) mapping(n *yaml.Node, v reflect.Value, field string) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, field, "want a mapping, got %s", describe(n))
	}
	if v.Type().Key().Kind() != reflect.String {
		return d.errf(n, field, "cannot decode into %s", v.Type())
	}
	if len(n.Content) == 0 {
		v.Set(reflect.Zero(v.Type())) // {} is "none", as when omitted
		return nil
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k, err := d.key(kn, field)
		if err != nil {
			return err
		}
		sub := mapField(field, k)
		if first, dup := seen[k]; dup {
			return d.errf(kn, sub, "duplicate key (first at line %d)", first)
		}
		seen[k] = kn.Line
		d.lines[sub] = kn.Line
		ev := reflect.New(v.Type().Elem()).Elem()
		if err := d.value(vn, ev, sub); err != nil {
			return err
		}
		m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), ev)
	}
	v.Set(m)
	return nil
}

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
		return mapField(p.parent.String(), p.key)
	}
	return fmt.Sprintf("%s[%d]", p.parent.String(), p.index)
}

// toAny decodes free-form data (tool input schemas, JSON results and bodies)
// into JSON-compatible values: nil, bool, int64, float64 (finite), string,
// []any and map[string]any. Integral numbers become int64 so that values
// survive a JSON round trip unchanged.
func (d *decoder) toAny(n *yaml.Node, field string) (any, error) {
	return d.anyValue(n, &anyPath{root: field})
}

func (d *decoder) anyValue(n *yaml.Node, p *anyPath) (any, error) {
	d.work++
	if d.work > maxDecodeWork {
		return nil, d.errf(n, p.String(), "document too large (more than %d values after expanding aliases)", maxDecodeWork)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, d.errf(n, p.String(), "unknown alias *%s", n.Value)
		}
		if d.expanding[n.Alias] {
			return nil, d.errf(n, p.String(), "alias *%s refers to a value that contains it", n.Value)
		}
		return d.anyValue(n.Alias, p)
	case yaml.SequenceNode:
		d.expanding[n] = true
		defer delete(d.expanding, n)
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
		d.expanding[n] = true
		defer delete(d.expanding, n)
		out := make(map[string]any, len(n.Content)/2)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			k, err := d.anyKey(kn, p)
			if err != nil {
				return nil, err
			}
			sub := &anyPath{parent: p, key: k, isKey: true}
			if first, dup := seen[k]; dup {
				return nil, d.errf(kn, sub.String(), "duplicate key (first at line %d)", first)
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
				return nil, d.errf(n, p.String(), "invalid boolean %q", n.Value)
			}
			return b, nil
		case "!!int", "!!float":
			var x any
			if err := n.Decode(&x); err != nil {
				return nil, d.errf(n, p.String(), "invalid number %q", n.Value)
			}
			return d.number(n, p, x)
		default:
			return n.Value, nil
		}
	}
	return nil, d.errf(n, p.String(), "unexpected value")
}

// anyKey is key for free-form data: it does not record lines.
func (d *decoder) anyKey(k *yaml.Node, p *anyPath) (string, error) {
	k = resolveAliasShallow(k)
	if k.Kind != yaml.ScalarNode {
		return "", d.errf(k, p.String(), "mapping keys must be strings, got %s", describe(k))
	}
	if k.ShortTag() == "!!merge" {
		return "", d.errf(k, p.String(), "merge keys (<<) are not supported")
	}
	return k.Value, nil
}

// number normalizes a decoded YAML number.
func (d *decoder) number(n *yaml.Node, p *anyPath, x any) (any, error) {
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
		return nil, d.errf(n, p.String(), "invalid number %q", n.Value)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, d.errf(n, p.String(), "%s is not representable in JSON", n.Value)
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}

func (d *decoder) duration(n *yaml.Node, field string) (Duration, error) {
	const want = `want a duration such as "250ms", "1.5s" or "2m"`
	if n.Kind != yaml.ScalarNode {
		return 0, d.errf(n, field, "%s, got %s", want, describe(n))
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if n.Decode(&i) == nil && i == 0 {
			return 0, nil
		}
		return 0, d.errf(n, field, "%s: a number needs a unit, got %s", want, n.Value)
	case "!!str":
		x, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			return 0, d.errf(n, field, "bad duration %q (%s)", n.Value, want)
		}
		if x < 0 {
			return 0, d.errf(n, field, "negative duration %q", n.Value)
		}
		return Duration(x), nil
	}
	return 0, d.errf(n, field, "%s, got %s", want, describe(n))
}

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1000, "mb": 1000 * 1000, "gb": 1000 * 1000 * 1000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

var sizeRE = regexp.MustCompile(`^([0-9]+)\s*([A-Za-z]*)$`)

func (d *decoder) size(n *yaml.Node, field string) (Size, error) {
	const want = `want a byte count such as 4096, "512B", "10KB" or "2MiB"`
	if n.Kind != yaml.ScalarNode {
		return 0, d.errf(n, field, "%s, got %s", want, describe(n))
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if n.Decode(&i) != nil {
			return 0, d.errf(n, field, "size %s out of range", n.Value)
		}
		if i < 0 {
			return 0, d.errf(n, field, "negative size %s", n.Value)
		}
		return Size(i), nil
	case "!!str":
		m := sizeRE.FindStringSubmatch(strings.TrimSpace(n.Value))
		if m == nil {
			return 0, d.errf(n, field, "bad size %q (%s)", n.Value, want)
		}
		mult, ok := sizeUnits[strings.ToLower(m[2])]
		if !ok {
			return 0, d.errf(n, field, "bad size unit %q in %q (want B, KB, MB, GB, KiB, MiB or GiB)", m[2], n.Value)
		}
		num, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || num > math.MaxInt64/mult {
			return 0, d.errf(n, field, "size %q out of range", n.Value)
		}
		return Size(num * mult), nil
	}
	return 0, d.errf(n, field, "%s, got %s", want, describe(n))
}

func (d *decoder) toolResult(n *yaml.Node, field string) (ToolResult, error) {
	const want = `want echo, {text: "..."} or {json: ...}`
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!str" && n.Value == "echo" {
			return ToolResult{Echo: true}, nil
		}
		return ToolResult{}, d.errf(n, field, "%s, got %s", want, describe(n))
	case yaml.MappingNode:
	default:
		return ToolResult{}, d.errf(n, field, "%s, got %s", want, describe(n))
	}
	var r ToolResult
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		k, err := d.key(kn, field)
		if err != nil {
			return r, err
		}
		sub := mapField(field, k)
		if first, dup := seen[k]; dup {
			return r, d.errf(kn, sub, "duplicate key (first at line %d)", first)
		}
		seen[k] = kn.Line
		d.lines[sub] = kn.Line
		switch k {
		case "text":
			if err := d.value(vn, reflect.ValueOf(&r.Text).Elem(), sub); err != nil {
				return r, err
			}
			if r.Text == "" {
				return r, d.errf(kn, sub, "must not be empty")
			}
		case "json":
			x, err := d.toAny(vn, sub)
			if err != nil {
				return r, err
			}
			if x == nil {
				return r, d.errf(kn, sub, "must not be null")
			}
			r.JSON = x
		default:
			return r, d.errf(kn, sub, "unknown field %q (%s)", k, want)
		}
	}
	if len(seen) != 1 {
		return ToolResult{}, d.errf(n, field, "%s: exactly one of text, json", want)
	}
	return r, nil
}

// ---------------------------------------------------------------------------
// Validation.

type validator struct {
	file   string
	lineOf func(field string) int
}

func (v *validator) errf(field, format string, args ...any) *ScriptError {
	return &ScriptError{File: v.file, Line: v.lineOf(field), Field: field, Msg: fmt.Sprintf(format, args...)}
}

func quoteList[T ~string](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = string(x)
	}
	return strings.Join(s, ", ")
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
	if err := uniqueKeys(v, s.Tools, "tools", "name", "tool name", func(t ToolSpec) string { return t.Name }); err != nil {
		return err
	}
	if err := uniqueKeys(v, s.Resources, "resources", "uri", "resource URI", func(r ResourceSpec) string { return r.URI }); err != nil {
		return err
	}
	if err := uniqueKeys(v, s.ResourceTemplates, "resourceTemplates", "uriTemplate", "resource template", func(r ResourceTemplate) string { return r.URITemplate }); err != nil {
		return err
	}
	if err := uniqueKeys(v, s.Prompts, "prompts", "name", "prompt name", func(p PromptSpec) string { return p.Name }); err != nil {
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
		if err := v.fault(&s.Faults[i], fmt.Sprintf("faults[%d]", i), s.Transport); err != nil {
			return err
		}
	}
	return nil
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
		if first, dup := seen[k]; dup {
			return v.errf(f, "duplicate %s %q (also %s[%d])", what, k, listField, first)
		}
		seen[k] = i
	}
	return nil
}

// kindParam is a kind-specific fault parameter.
type kindParam struct {
	name  string
	set   func(f *Fault) bool
	kinds []FaultKind
}

var kindParams = []kindParam{
	{"mode", func(f *Fault) bool { return f.Mode != "" }, []FaultKind{KindCrash}},
	{"exit", func(f *Fault) bool { return f.Exit }, []FaultKind{KindCrash}},
	{"exitCode", func(f *Fault) bool { return f.ExitCode != 0 }, []FaultKind{KindCrash}},
	{"stage", func(f *Fault) bool { return f.Stage != "" }, []FaultKind{KindCrash, KindStall}},
	{"status", func(f *Fault) bool { return f.Status != 0 }, []FaultKind{KindHTTPStatus}},
	{"body", func(f *Fault) bool { return f.Body != nil }, []FaultKind{KindHTTPStatus}},
	{"headers", func(f *Fault) bool { return len(f.Headers) > 0 }, []FaultKind{KindHTTPStatus}},
	{"progress", func(f *Fault) bool { return f.Progress != 0 }, []FaultKind{KindStall}},
	{"delay", func(f *Fault) bool { return f.Delay != 0 }, []FaultKind{KindLatency}},
	{"jitter", func(f *Fault) bool { return f.Jitter != 0 }, []FaultKind{KindLatency}},
	{"code", func(f *Fault) bool { return f.Code != 0 }, []FaultKind{KindJSONRPCError}},
	{"message", func(f *Fault) bool { return f.Message != "" }, []FaultKind{KindJSONRPCError}},
	{"text", func(f *Fault) bool { return f.Text != "" }, []FaultKind{KindToolError}},
	{"variant", func(f *Fault) bool { return f.Variant != "" }, []FaultKind{KindMalformed}},
	{"size", func(f *Fault) bool { return f.Size != 0 }, []FaultKind{KindMalformed}},
	{"on", func(f *Fault) bool { return f.On != 0 }, []FaultKind{KindFlap}},
	{"off", func(f *Fault) bool { return f.Off != 0 }, []FaultKind{KindFlap}},
	{"fault", func(f *Fault) bool { return f.Fault != nil }, []FaultKind{KindFlap}},
}

// paramsOf lists the parameters of a kind, for messages.
func paramsOf(k FaultKind) string {
	var names []string
	for _, p := range kindParams {
		for _, pk := range p.kinds {
			if pk == k {
				names = append(names, p.name)
			}
		}
	}
	if len(names) == 0 {
		return string(k) + " takes no parameters"
	}
	return string(k) + " takes " + strings.Join(names, ", ")
}

// matchFields are the per-request fields that crash mode down refuses.
var matchFields = []kindParam{
	{"match", func(f *Fault) bool { return f.Match != (Match{}) }, nil},
	{"after", func(f *Fault) bool { return f.After != 0 }, nil},
	{"count", func(f *Fault) bool { return f.Count != 0 }, nil},
	{"probability", func(f *Fault) bool { return f.Probability != nil }, nil},
	{"seed", func(f *Fault) bool { return f.Seed != 0 }, nil},
}

// flapOnlyFields are the schedule fields that a flap's nested fault leaves
// to the flap.
var flapOnlyFields = []kindParam{
	{"after", func(f *Fault) bool { return f.After != 0 }, nil},
	{"count", func(f *Fault) bool { return f.Count != 0 }, nil},
	{"probability", func(f *Fault) bool { return f.Probability != nil }, nil},
	{"seed", func(f *Fault) bool { return f.Seed != 0 }, nil},
	{"at", func(f *Fault) bool { return f.At != 0 }, nil},
	{"for", func(f *Fault) bool { return f.For != 0 }, nil},
}

func knownMethod(m string) bool {
	for _, k := range KnownMethods {
		if k == m {
			return true
		}
	}
	return false
}

var (
	crashModes       = []string{CrashEOF, CrashReset, CrashDown}
	crashStages      = []string{StageBeforeHeaders, StageAfterHeaders}
	stallStages      = []string{StageBeforeHeaders, StageAfterHeaders, StageAfterProgress, StageMidBody}
	malformedVariant = []string{MalformedInvalidJSON, MalformedWrongID, MalformedTruncatedSSE, MalformedOversized}
)

func oneOf(x string, xs []string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func (v *validator) fault(f *Fault, field string, transport Transport) error {
	at := func(name string) string { return joinField(field, name) }
	if f.Kind == "" {
		return v.errf(at("kind"), "required (want %s)", quoteList(faultKinds))
	}
	known := false
	for _, k := range faultKinds {
		if f.Kind == k {
			known = true
		}
	}
	if !known {
		return v.errf(at("kind"), "unknown fault kind %q (want %s)", f.Kind, quoteList(faultKinds))
	}
	for _, p := range kindParams {
		if p.set(f) && !oneOfKind(f.Kind, p.kinds) {
			return v.errf(at(p.name), "%s does not apply to kind %s (%s)", p.name, f.Kind, paramsOf(f.Kind))
		}
	}
	stdio := transport == TransportStdio
	switch f.Kind {
	case KindCrash:
		if f.Mode != "" && !oneOf(f.Mode, crashModes) {
			return v.errf(at("mode"), "unknown crash mode %q (want %s)", f.Mode, quoteList(crashModes))
		}
		if f.Mode == CrashDown {
			if f.Stage != "" {
				return v.errf(at("stage"), "stage does not apply to mode down (the listener is closed)")
			}
			if f.Exit || f.ExitCode != 0 {
				return v.errf(at("exit"), "exit does not apply to mode down")
			}
			for _, p := range matchFields {
				if p.set(f) {
					return v.errf(at(p.name), "mode down takes no %s (it is schedule-only: use at and for)", p.name)
				}
			}
		}
		if f.Stage != "" && !oneOf(f.Stage, crashStages) {
			if oneOf(f.Stage, stallStages) {
				return v.errf(at("stage"), "stage %s applies only to stall (crash stages: %s)", f.Stage, quoteList(crashStages))
			}
			return v.errf(at("stage"), "unknown crash stage %q (want %s)", f.Stage, quoteList(crashStages))
		}
		if stdio && f.Stage == StageAfterHeaders {
			return v.errf(at("stage"), "stage after_headers does not apply to stdio")
		}
		if f.ExitCode != 0 && !f.Exit {
			return v.errf(at("exitCode"), "exitCode requires exit: true")
		}
		if f.ExitCode < 0 || f.ExitCode > 255 {
			return v.errf(at("exitCode"), "exit code %d out of range (want 1..255)", f.ExitCode)
		}
	case KindHTTPStatus:
		if stdio {
			return v.errf(at("kind"), "http_status does not apply to stdio")
		}
		if f.Status == 0 {
			return v.errf(at("status"), "required (an HTTP status such as 403)")
		}
		if f.Status < 100 || f.Status > 599 {
			return v.errf(at("status"), "HTTP status %d out of range (want 100..599)", f.Status)
		}
		if b := f.Body; b != nil {
			n := 0
			if b.Text != "" {
				n++
			}
			if b.JSON != nil {
				n++
			}
			if b.Raw != "" {
				n++
			}
			if n != 1 {
				return v.errf(at("body"), "exactly one of text, json, raw")
			}
		}
		for name, val := range f.Headers {
			hf := mapField(at("headers"), name)
			if !validHeaderName(name) {
				return v.errf(hf, "invalid header name %q", name)
			}
			if strings.ContainsAny(val, "\r\n\x00") {
				return v.errf(hf, "header value must not contain CR, LF or NUL")
			}
		}
	case KindStall:
		if f.Stage != "" && !oneOf(f.Stage, stallStages) {
			return v.errf(at("stage"), "unknown stall stage %q (want %s)", f.Stage, quoteList(stallStages))
		}
		if f.Progress < 0 {
			return v.errf(at("progress"), "must be at least 1")
		}
		if f.Progress > MaxProgress {
			return v.errf(at("progress"), "%d is out of range: allowed 1 to %d", f.Progress, MaxProgress)
		}
		if f.Progress != 0 && f.Stage != StageAfterProgress {
			return v.errf(at("progress"), "progress applies only to stage after_progress")
		}
	case KindLatency:
		if f.Delay <= 0 {
			return v.errf(at("delay"), "required: a positive duration such as \"200ms\"")
		}
		if f.Jitter < 0 {
			return v.errf(at("jitter"), "must not be negative")
		}
	case KindJSONRPCError:
		if f.Code == 0 {
			return v.errf(at("code"), "required: a non-zero JSON-RPC error code such as -32603")
		}
		if f.Message == "" {
			return v.errf(at("message"), "required")
		}
	case KindToolError:
		if f.Text == "" {
			return v.errf(at("text"), "required")
		}
		if f.Match.Method != "" && f.Match.Method != "tools/call" {
			return v.errf(at("match.method"), "tool_error applies only to tools/call, not %q", f.Match.Method)
		}
	case KindMalformed:
		if f.Variant == "" {
			return v.errf(at("variant"), "required (want %s)", quoteList(malformedVariant))
		}
		if !oneOf(f.Variant, malformedVariant) {
			return v.errf(at("variant"), "unknown malformed variant %q (want %s)", f.Variant, quoteList(malformedVariant))
		}
		if f.Variant == MalformedOversized && f.Size <= 0 {
			return v.errf(at("size"), "required for variant oversized: a positive size such as \"2MiB\"")
		}
		if f.Variant != MalformedOversized && f.Size != 0 {
			return v.errf(at("size"), "size applies only to variant oversized")
		}
	case KindFlap:
		if f.On <= 0 {
			return v.errf(at("on"), "required: a positive duration")
		}
		if f.Off <= 0 {
			return v.errf(at("off"), "required: a positive duration")
		}
		if f.Fault == nil {
			return v.errf(at("fault"), "required: the fault to switch on and off")
		}
		if f.Fault.Kind == KindFlap {
			return v.errf(at("fault.kind"), "a flap cannot contain another flap")
		}
		for _, p := range flapOnlyFields {
			if p.set(f.Fault) {
				return v.errf(at("fault."+p.name), "%s belongs on the flap, not on its nested fault (the flap's schedule applies)", p.name)
			}
		}
		if f.Fault.Kind == KindCrash && f.Fault.Mode == CrashDown {
			for _, p := range matchFields {
				if p.set(f) {
					return v.errf(at(p.name), "a flap of mode down takes no %s (down is schedule-only)", p.name)
				}
			}
		}
		if err := v.fault(f.Fault, at("fault"), transport); err != nil {
			return err
		}
	}
	if m := f.Match.Method; m != "" && !knownMethod(m) {
		return v.errf(at("match.method"), "unknown method %q (want %s)", m, strings.Join(KnownMethods, ", "))
	}
	if f.Match.Tool != "" {
		if err := checkGlob(f.Match.Tool); err != nil {
			return v.errf(at("match.tool"), "bad glob %q: %v", f.Match.Tool, err)
		}
	}
	if p := f.Probability; p != nil && !(*p >= 0 && *p <= 1) {
		return v.errf(at("probability"), "must be between 0 and 1, got %v", *p)
	}
	if f.After < 0 {
		return v.errf(at("after"), "must not be negative")
	}
	if f.Count < 0 {
		return v.errf(at("count"), "must not be negative (0 = unlimited)")
	}
	if f.At < 0 {
		return v.errf(at("at"), "must not be negative")
	}
	if f.For < 0 {
		return v.errf(at("for"), "must not be negative (0 = until cleared)")
	}
	return nil
}

func oneOfKind(k FaultKind, ks []FaultKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// checkGlob reports whether pattern is a valid path.Match pattern.
func checkGlob(pattern string) error {
	_, err := path.Match(pattern, "")
	return err
}

// validHeaderName reports whether name is an RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
