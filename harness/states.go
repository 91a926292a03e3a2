package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// BackendState is one backend's state as a gateway's admin API reports it
// (health API or session API).
type BackendState struct {
	// Name is the backend's name.
	Name string `json:"name"`
	// State is the health or session state (healthy, unhealthy, connected,
	// error, ...).
	State string `json:"state,omitempty"`
	// Breaker is the circuit state (closed, open, half-open) when reported.
	Breaker string `json:"breaker,omitempty"`
	// LastError is the last error when reported.
	LastError string `json:"lastError,omitempty"`
	// Raw is the backend's JSON object as decoded.
	Raw map[string]any `json:"raw,omitempty"`
}

// BackendStates maps backend names to their states.
type BackendStates map[string]BackendState

// Names returns the backend names, sorted.
func (s BackendStates) Names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Keys tried, in order, for a backend's state and its breaker state.
var (
	stateKeys   = []string{"state", "status", "health", "healthState", "health_state"}
	breakerKeys = []string{"breaker", "breakerState", "breaker_state", "circuit", "circuitState", "circuit_state", "circuitBreaker", "circuit_breaker"}
)

// ParseBackendStates reads per-backend states from a gateway's health JSON
// (GET /api/backends/health) or session JSON (GET /api/sessions/{id}). It
// accepts the backends as an object keyed by name or as a list of objects
// with "name", either at the top level or under "backends". A backend's
// state is the first string among state, status, health, healthState; its
// breaker state is a string or an object's "state" under breaker, circuit,
// circuitState and similar keys.
func ParseBackendStates(data []byte) (BackendStates, error) {
	var doc any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("harness: backend states: %w", err)
	}
	if m, ok := doc.(map[string]any); ok {
		if b, ok := m["backends"]; ok {
			doc = b
		}
	}
	out := BackendStates{}
	add := func(name string, v any) {
		obj, ok := v.(map[string]any)
		if !ok || name == "" {
			return
		}
		bs := BackendState{Name: name, Raw: obj}
		bs.State = firstString(obj, stateKeys)
		for _, k := range breakerKeys {
			switch bv := obj[k].(type) {
			case string:
				bs.Breaker = bv
			case map[string]any:
				bs.Breaker = firstString(bv, []string{"state", "status"})
			}
			if bs.Breaker != "" {
				break
			}
		}
		bs.LastError, _ = obj["lastError"].(string)
		out[name] = bs
	}
	switch d := doc.(type) {
	case map[string]any:
		for name, v := range d {
			add(name, v)
		}
	case []any:
		for _, v := range d {
			if obj, ok := v.(map[string]any); ok {
				name, _ := obj["name"].(string)
				add(name, obj)
			}
		}
	default:
		return nil, fmt.Errorf("harness: backend states: want an object or a list of backends, got %T", doc)
	}
	return out, nil
}

func firstString(obj map[string]any, keys []string) string {
	for _, k := range keys {
		if s, ok := obj[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// MissingCapabilityError says a scenario needs capabilities the target
// lacks: the scenario is skipped with this reason.
type MissingCapabilityError struct {
	// Target names the target.
	Target string
	// Missing are the capabilities it lacks.
	Missing Capabilities
}

// Error says which capabilities the target lacks.
func (e *MissingCapabilityError) Error() string {
	return fmt.Sprintf("target %s lacks capability %s", e.Target, e.Missing)
}

// Require returns a *MissingCapabilityError when the target lacks any of
// need, nil otherwise.
func (e *Env) Require(need ...Capability) error {
	if missing := e.Capabilities().Missing(need...); len(missing) > 0 {
		return &MissingCapabilityError{Target: e.target.Name(), Missing: missing}
	}
	return nil
}

// getJSON GETs baseURL+path with a deadline and returns the body of a 200.
func getJSON(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	ctx, cancel := withDefaultTimeout(ctx, DefaultControlTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d: %s", u, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	return data, nil
}

var adminHTTP = &http.Client{Timeout: DefaultControlTimeout}

// HealthPath and SessionPath are the admin API paths the harness reads.
const (
	HealthPath  = "/api/backends/health"
	SessionPath = "/api/sessions/"
)

// HealthStates reads GET /api/backends/health (needs CapHealthAPI).
func (e *Env) HealthStates(ctx context.Context) (BackendStates, error) {
	if err := e.Require(CapHealthAPI); err != nil {
		return nil, err
	}
	data, err := getJSON(ctx, adminHTTP, e.gateway.BaseURL()+HealthPath)
	if err != nil {
		return nil, fmt.Errorf("harness: health API: %w", err)
	}
	return ParseBackendStates(data)
}

// SessionStates reads GET /api/sessions/{id} (needs CapSessionAPI).
func (e *Env) SessionStates(ctx context.Context, sessionID string) (BackendStates, error) {
	if err := e.Require(CapSessionAPI); err != nil {
		return nil, err
	}
	data, err := getJSON(ctx, adminHTTP, e.gateway.BaseURL()+SessionPath+url.PathEscape(sessionID))
	if err != nil {
		return nil, fmt.Errorf("harness: session API: %w", err)
	}
	return ParseBackendStates(data)
}

// pollInterval is the default HealthPoller interval.
const pollInterval = 50 * time.Millisecond
