package targets

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// StateAPI says where a gateway's per-backend states are (the health API,
// or the session API) and how to read them. The zero value reads the
// reference gateway's JSON with the rules of ParseBackendStates; a target
// profile's healthAPI or sessionAPI section fills it for any other shape.
type StateAPI struct {
	// Path is appended to the gateway's BaseURL. It is a template: the
	// session API's gets {{.SessionID}} (path-escaped). Empty: the
	// reference gateway's (HealthPath, SessionPath + "{{.SessionID}}").
	Path string `yaml:"path"`
	// Backends is a JSON pointer (RFC 6901) to the per-backend object
	// (keyed by backend name) or list (entries carry the Name field); ""
	// is the whole document. Nil: the "backends" key when the document
	// has one, else the whole document.
	Backends *string `yaml:"backends"`
	// Name is the field holding a list entry's backend name (default
	// "name"). An object keyed by name needs none.
	Name string `yaml:"name"`
	// Status, Circuit and LastError name the fields of a backend's health
	// (or session) state, breaker state and last error. Declared names are
	// matched case-insensitively (an exact match first); empty ones fall
	// back to the reference's keys, matched exactly: state, status,
	// health, healthState, health_state; breaker, breakerState, circuit,
	// circuitState, circuitBreaker (and snake_case forms); lastError. A
	// circuit field holding an object is read through its state or status.
	Status    string `yaml:"status"`
	Circuit   string `yaml:"circuit"`
	LastError string `yaml:"lastError"`
	// StatusValues and CircuitValues map the gateway's values to ours
	// (healthy, unhealthy, degraded, ...; closed, open, half-open). Keys
	// match case-insensitively; unmapped values pass through unchanged.
	StatusValues  map[string]string `yaml:"statusValues"`
	CircuitValues map[string]string `yaml:"circuitValues"`
	// Keepalive says where a backend's keepalive state is in its entry
	// (health API only). Nil: the reference's keepalive object
	// (DefaultKeepaliveFields) when the whole StateAPI is the reference's
	// (zero), else not reported.
	Keepalive *KeepaliveFields `yaml:"keepalive"`
}

// KeepaliveFields are JSON pointers (RFC 6901) into one backend's entry of
// the health API to its keepalive state; an empty one is not reported.
type KeepaliveFields struct {
	// Enabled points at a boolean: the backend's keepalive runs.
	Enabled string `yaml:"enabled"`
	// Failures points at the number of consecutive failed probes.
	Failures string `yaml:"failures"`
	// Sessions points at the number of sessions probing the backend.
	Sessions string `yaml:"sessions"`
}

// The words a profile's statusValues and circuitValues may map to: the
// reference gateway's health states (healthAPI), session states
// (sessionAPI) and circuit states.
var (
	HealthStateWords  = []string{"healthy", "unhealthy", "degraded", "unknown", "unauthenticated"}
	SessionStateWords = []string{"connected", "error", "closed"}
	CircuitStateWords = []string{"closed", "open", "half-open"}
)

// DefaultKeepaliveFields are the reference gateway's.
var DefaultKeepaliveFields = KeepaliveFields{Enabled: "/keepalive/enabled", Failures: "/keepalive/consecutiveFailures", Sessions: "/keepalive/sessions"}

// KeepaliveFieldsOf returns where the API reports keepalive state, and
// whether it does.
func (a StateAPI) KeepaliveFieldsOf() (KeepaliveFields, bool) {
	if a.Keepalive != nil {
		return *a.Keepalive, a.Keepalive.Enabled != ""
	}
	if a.Path == "" && a.Backends == nil && a.Name == "" && a.Status == "" && a.Circuit == "" && a.LastError == "" &&
		len(a.StatusValues) == 0 && len(a.CircuitValues) == 0 {
		return DefaultKeepaliveFields, true
	}
	return KeepaliveFields{}, false
}

// KeepaliveState is a backend's keepalive state as a health API reports it.
type KeepaliveState struct {
	// Enabled: the backend's keepalive runs.
	Enabled bool `json:"enabled"`
	// Failures is the number of consecutive failed probes (-1: not
	// reported).
	Failures int `json:"failures"`
	// Sessions is the number of sessions probing (-1: not reported).
	Sessions int `json:"sessions"`
}

// keepalive reads obj's keepalive state (nil when not reported).
func (a StateAPI) keepalive(obj map[string]any) *KeepaliveState {
	f, ok := a.KeepaliveFieldsOf()
	if !ok {
		return nil
	}
	en, _ := ResolveJSONPointer(obj, f.Enabled) // nil when it points at nothing
	enabled, ok := en.(bool)
	if !ok {
		return nil
	}
	// A declared number that is missing or not a number: the state is not
	// as declared, so none is reported (the checks reading it fail).
	num := func(p string) (int, bool) {
		if p == "" {
			return -1, true
		}
		v, _ := ResolveJSONPointer(obj, p)
		n, ok := v.(float64)
		return int(n), ok
	}
	failures, ok1 := num(f.Failures)
	sessions, ok2 := num(f.Sessions)
	if !ok1 || !ok2 {
		return nil
	}
	return &KeepaliveState{Enabled: enabled, Failures: failures, Sessions: sessions}
}

// stateAPIData is what StateAPI.Path is executed with.
type stateAPIData struct {
	// SessionID is the MCP session id, path-escaped.
	SessionID string
}

// URL renders the API's URL under baseURL for sessionID ("" for the health
// API). def is the reference path used when Path is empty.
func (a StateAPI) URL(baseURL, def, sessionID string) (string, error) {
	p := cmp.Or(a.Path, def)
	out, err := RenderTemplate("path", p, stateAPIData{SessionID: url.PathEscape(sessionID)})
	if err != nil {
		return "", err
	}
	return baseURL + out, nil
}

// DefaultSessionPath is the reference's session API path template.
const DefaultSessionPath = SessionPath + "{{.SessionID}}"

// Parse reads per-backend states from the API's JSON.
func (a StateAPI) Parse(data []byte) (BackendStates, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("harness: backend states: %w", err)
	}
	if a.Backends == nil {
		if m, ok := doc.(map[string]any); ok {
			if b, ok := m["backends"]; ok {
				doc = b
			}
		}
	} else {
		v, err := ResolveJSONPointer(doc, *a.Backends)
		if err != nil {
			return nil, fmt.Errorf("harness: backend states: %w", err)
		}
		doc = v
	}
	out := BackendStates{}
	add := func(name string, v any) {
		obj, ok := v.(map[string]any)
		if !ok || name == "" {
			return
		}
		out[name] = BackendState{Name: name, Raw: obj, Keepalive: a.keepalive(obj),
			State:     mapValue(a.StatusValues, field(obj, a.Status, stateKeys, asString)),
			Breaker:   mapValue(a.CircuitValues, field(obj, a.Circuit, breakerKeys, circuitString)),
			LastError: field(obj, a.LastError, []string{"lastError"}, asString)}
	}
	switch d := doc.(type) {
	case map[string]any:
		for name, v := range d {
			add(name, v)
		}
	case []any:
		for _, v := range d {
			if obj, ok := v.(map[string]any); ok {
				add(field(obj, a.Name, []string{"name"}, asString), obj)
			}
		}
	default:
		return nil, fmt.Errorf("harness: backend states: want an object or a list of backends, got %T", doc)
	}
	return out, nil
}

// field reads obj's declared field (matched case-insensitively), or else
// the first of defaults (matched exactly) that conv makes non-empty.
func field(obj map[string]any, declared string, defaults []string, conv func(any) string) string {
	if declared != "" {
		return conv(lookupFold(obj, declared))
	}
	for _, k := range defaults {
		if s := conv(obj[k]); s != "" {
			return s
		}
	}
	return ""
}

// asString is v when it is a string, else "".
func asString(v any) string {
	s, _ := v.(string)
	return s
}

// circuitString reads a breaker state: a string, or an object's state or
// status.
func circuitString(v any) string {
	switch bv := v.(type) {
	case string:
		return bv
	case map[string]any:
		return field(bv, "", []string{"state", "status"}, asString)
	}
	return ""
}

// lookupFold returns obj[key], or else the value of the first key (in
// sorted order) equal to key under Unicode case folding.
func lookupFold(obj map[string]any, key string) any {
	if v, ok := obj[key]; ok {
		return v
	}
	best := ""
	var found any
	for k, v := range obj {
		if strings.EqualFold(k, key) && (found == nil || k < best) {
			best, found = k, v
		}
	}
	return found
}

// mapValue maps v through m (keys case-insensitive); unmapped values pass.
func mapValue(m map[string]string, v string) string {
	if v == "" || len(m) == 0 {
		return v
	}
	if to, ok := m[v]; ok {
		return to
	}
	for from, to := range m {
		if strings.EqualFold(from, v) {
			return to
		}
	}
	return v
}

// ValidateJSONPointer checks RFC 6901 syntax: "" or "/"-separated tokens
// in which "~" appears only as "~0" or "~1".
func ValidateJSONPointer(p string) error {
	if p == "" {
		return nil
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("JSON pointer %q must be empty or start with \"/\"", p)
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 >= len(p) || (p[i+1] != '0' && p[i+1] != '1')) {
			return fmt.Errorf("JSON pointer %q: \"~\" at character %d must be followed by 0 or 1", p, i+1)
		}
	}
	return nil
}

// ResolveJSONPointer returns the value p points at in doc (a decoded JSON
// value): object members by name, list entries by decimal index.
func ResolveJSONPointer(doc any, p string) (any, error) {
	if err := ValidateJSONPointer(p); err != nil {
		return nil, err
	}
	if p == "" {
		return doc, nil
	}
	cur := doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("JSON pointer %q: no member %q", p, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || (len(tok) > 1 && tok[0] == '0') {
				return nil, fmt.Errorf("JSON pointer %q: no list entry %q (list of %d)", p, tok, len(c))
			}
			cur = c[i]
		default:
			return nil, errors.New("JSON pointer " + strconv.Quote(p) + ": " + strconv.Quote(tok) + " is under a scalar")
		}
	}
	return cur, nil
}

// AdminAPIs is how the harness reads a target's admin APIs. The zero value
// is the reference gateway's.
type AdminAPIs struct {
	// Health is the health API (GET HealthPath on the reference).
	Health StateAPI
	// Session is the per-session API (GET SessionPath{id} on the
	// reference).
	Session StateAPI
	// Metrics maps our metric names (the reference's, as the scenarios
	// use them, e.g. vmcp_circuit_breaker_state) to the gateway's.
	Metrics map[string]string
}

// AdminAPITarget is a Target whose admin APIs are not the reference's
// (Exec built from a target profile).
type AdminAPITarget interface {
	Target
	// AdminAPIs says where the admin APIs are and how to read them.
	AdminAPIs() AdminAPIs
}

// TargetAdminAPIs returns t's AdminAPIs, or the reference's (the zero
// value) when t does not say.
func TargetAdminAPIs(t Target) AdminAPIs {
	if a, ok := t.(AdminAPITarget); ok {
		return a.AdminAPIs()
	}
	return AdminAPIs{}
}
