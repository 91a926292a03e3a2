package targets

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
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
	// Keepalive is the backend's keepalive state, when the API reports it
	// (StateAPI.Keepalive).
	Keepalive *KeepaliveState `json:"keepalive,omitempty"`
	// Raw is the backend's JSON object as decoded.
	Raw map[string]any `json:"raw,omitempty"`
}

// BackendStates maps backend names to their states.
type BackendStates map[string]BackendState

// Names returns the backend names, sorted.
func (s BackendStates) Names() []string {
	return slices.Sorted(maps.Keys(s))
}

// Keys tried, in order, for a backend's state and its breaker state.
var (
	stateKeys   = []string{"state", "status", "health", "healthState", "health_state"}
	breakerKeys = []string{"breaker", "breakerState", "breaker_state", "circuit", "circuitState", "circuit_state", "circuitBreaker", "circuit_breaker"}
)

// ParseBackendStates reads per-backend states from a gateway's health JSON
// (GET /api/backends/health) or session JSON (GET /api/sessions/{id}) in
// the reference's terms (StateAPI{}.Parse; a target profile's StateAPI
// reads other shapes). It accepts the backends as an object keyed by name
// or as a list of objects with "name", either at the top level or under
// "backends". A backend's state is the first string among state, status,
// health, healthState; its breaker state is a string or an object's
// "state" under breaker, circuit, circuitState and similar keys.
func ParseBackendStates(data []byte) (BackendStates, error) {
	return StateAPI{}.Parse(data)
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

// GetJSON GETs u with a deadline (and header: a profile's headers for
// that API, nil for none) and returns the body of a 200.
func GetJSON(ctx context.Context, hc *http.Client, u string, header map[string]string) ([]byte, error) {
	ctx, cancel := runtimes.WithDefaultTimeout(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
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

// AdminHTTP reads the gateway's admin APIs, each request bounded.
var AdminHTTP = &http.Client{Timeout: runtimes.DefaultControlTimeout}

// HealthPath and SessionPath are the admin API paths the harness reads.
const (
	HealthPath  = "/api/backends/health"
	SessionPath = "/api/sessions/"
)

// pollInterval is the default HealthPoller interval.
const pollInterval = 50 * time.Millisecond
