// Package faults is the fault engine of vmcp-chaos: fault kinds registered
// by name (one file per kind, as toxiproxy's toxics), the matching engine
// (method, tool, after, count, probability, at, for) and the applying of
// faults in front of any http.Handler (Middleware) or stdio line. The fake
// backends and the fault proxy share it.
package faults

import (
	"fmt"
	"path"
	"reflect"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Kind names a kind of fault; every kind registers a Spec (see Register).
type Kind string

// Transport names how the faulted traffic flows; validation refuses kinds
// and parameters that do not apply to it.
type Transport string

// Transports.
const (
	TransportStreamableHTTP Transport = "streamable-http"
	TransportSSE            Transport = "sse"
	TransportStdio          Transport = "stdio"
)

// Duration and Size are the strict YAML duration and byte-size types.
type (
	Duration = strictyaml.Duration
	Size     = strictyaml.Size
)

// Fault is one fault: a kind with its parameters, a match and a schedule.
// In YAML and JSON the kind's parameters sit beside kind, flat (see
// codec.go); a parameter the kind does not take is an error naming it.
type Fault struct {
	Kind Kind `yaml:"kind" json:"kind"`
	// Params are the kind's parameters: a pointer to the kind's own struct,
	// declared in the kind's file (*Crash, *HTTPStatus, *Stall, ...). Nil
	// stands for the kind's defaults.
	Params Params `yaml:"-" json:"-"`

	// Match and schedule (every kind).
	Match       Match    `yaml:"match,omitempty" json:"match,omitempty"`
	After       int      `yaml:"after,omitempty" json:"after,omitempty"`             // skip the first N matching requests
	Count       int      `yaml:"count,omitempty" json:"count,omitempty"`             // apply to N requests; 0 = unlimited
	Probability *float64 `yaml:"probability,omitempty" json:"probability,omitempty"` // 0..1; nil = always
	Seed        int64    `yaml:"seed,omitempty" json:"seed,omitempty"`
	At          Duration `yaml:"at,omitempty" json:"at,omitempty"`   // active from this long after the fault is set
	For         Duration `yaml:"for,omitempty" json:"for,omitempty"` // active for this long (0 = until cleared)

	// Line is the line the fault starts on (0 when not from a file).
	Line int `yaml:"-" json:"-"`
}

// scheduleFields are the Fault fields every kind takes.
var scheduleFields = []string{"kind", "match", "after", "count", "probability", "seed", "at", "for"}

// ApplyDefaults gives a fault without Params the kind's empty parameters,
// then fills in the kind's defaults (see each kind's Defaults); a flap's
// nested fault gets its defaults too. It is idempotent.
func (f *Fault) ApplyDefaults() {
	s, ok := Lookup(f.Kind)
	if !ok {
		return
	}
	if f.Params == nil {
		f.Params = s.New()
	}
	if d, ok := f.Params.(defaulter); ok {
		d.Defaults()
	}
	if n := nested(f); n != nil {
		n.ApplyDefaults()
	}
}

// Body is the body of an http_status fault: exactly one of Text, JSON
// (for example a JSON-RPC error object) or Raw (bytes sent as they are).
type Body struct {
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
	JSON any    `yaml:"json,omitempty" json:"json,omitempty"`
	Raw  string `yaml:"raw,omitempty" json:"raw,omitempty"`
}

// Match selects the requests a fault applies to. Empty fields match all.
type Match struct {
	Method string `yaml:"method,omitempty" json:"method,omitempty"`
	Tool   string `yaml:"tool,omitempty" json:"tool,omitempty"` // glob (path.Match) on the tool, prompt or resource name
}

// Matches reports whether a request (method, and the tool, prompt or
// resource name it addresses) is selected by m.
func (m Match) Matches(method, name string) bool {
	if m.Method != "" && m.Method != method {
		return false
	}
	if m.Tool == "" {
		return true
	}
	ok, err := path.Match(m.Tool, name)
	return name != "" && err == nil && ok
}

// KnownMethods are the JSON-RPC methods a fault's match.method may name.
var KnownMethods = []string{
	"initialize", "notifications/initialized", "ping", "tools/list", "tools/call",
	"resources/list", "resources/read", "resources/templates/list", "prompts/list",
	"prompts/get", "server/discover", "notifications/cancelled", "completion/complete",
	"logging/setLevel",
}

// Describe renders faults briefly, e.g. "http_status 403 [tools/call echo];
// stall after_headers", for timelines and reports.
func Describe(faults []Fault) string {
	parts := make([]string, 0, len(faults))
	for i := range faults {
		f := &faults[i]
		s := string(f.Kind)
		if d, ok := f.Params.(describer); ok {
			s = d.Describe()
		} else if f.Params != nil {
			rv := reflect.ValueOf(f.Params).Elem()
			for i := range rv.NumField() {
				if v := rv.Field(i); !v.IsZero() {
					s += fmt.Sprintf(" %v", v.Interface())
					break
				}
			}
		}
		if f.Match.Method != "" || f.Match.Tool != "" {
			s += " [" + strings.TrimSpace(f.Match.Method+" "+f.Match.Tool) + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}
