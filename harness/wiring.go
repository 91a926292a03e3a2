package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Require returns a *MissingCapabilityError when the target lacks any of
// need, nil otherwise.
func (e *Env) Require(need ...targets.Capability) error {
	if missing := e.Capabilities().Missing(need...); len(missing) > 0 {
		return &targets.MissingCapabilityError{Target: e.target.Name(), Missing: missing}
	}
	return nil
}

// StartHealthPoller starts a poller of the gateway's health API that
// Env.Close stops. It needs CapHealthAPI (else a *MissingCapabilityError).
func (e *Env) StartHealthPoller(interval time.Duration) (*targets.HealthPoller, error) {
	if err := e.Require(targets.CapHealthAPI); err != nil {
		return nil, err
	}
	p, err := targets.NewHealthPoller(e.target, e.gateway.BaseURL(), e.rec, interval)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, fmt.Errorf("harness: env closed")
	}
	e.pollers = append(e.pollers, p)
	e.mu.Unlock()
	p.Start()
	return p, nil
}

// HealthStates reads the health API (GET /api/backends/health on the
// reference; the target's AdminAPIs say otherwise) (needs CapHealthAPI).
func (e *Env) HealthStates(ctx context.Context) (targets.BackendStates, error) {
	if err := e.Require(targets.CapHealthAPI); err != nil {
		return nil, err
	}
	return e.readStates(ctx, "health", targets.TargetAdminAPIs(e.target).Health, targets.HealthPath, "")
}

// SessionStates reads the session API (GET /api/sessions/{id} on the
// reference; the target's AdminAPIs say otherwise) (needs CapSessionAPI).
func (e *Env) SessionStates(ctx context.Context, sessionID string) (targets.BackendStates, error) {
	if err := e.Require(targets.CapSessionAPI); err != nil {
		return nil, err
	}
	return e.readStates(ctx, "session", targets.TargetAdminAPIs(e.target).Session, targets.DefaultSessionPath, sessionID)
}

// readStates GETs the what ("health" or "session") API and parses it.
func (e *Env) readStates(ctx context.Context, what string, api targets.StateAPI, def, sessionID string) (targets.BackendStates, error) {
	u, err := api.URL(e.gateway.BaseURL(), def, sessionID)
	if err != nil {
		return nil, fmt.Errorf("harness: %s API: %w", what, err)
	}
	header := targets.HeadersOf(e.target).Health
	if what == "session" {
		header = targets.HeadersOf(e.target).Session
	}
	data, err := targets.GetJSON(ctx, targets.AdminHTTP, u, header)
	if err != nil {
		return nil, fmt.Errorf("harness: %s API: %w", what, err)
	}
	return api.Parse(data)
}

// NewResults starts a results document for a run against t (nil
// allowed).
func NewResults(t targets.Target) *history.Results {
	r := &history.Results{SchemaVersion: history.SchemaVersion, Started: time.Now().Round(0), Scenarios: []history.ScenarioResult{}, Capabilities: []string{}}
	r.HarnessVersion = history.Version().String()
	if t != nil {
		r.Target = t.Name()
		for _, c := range t.Capabilities() {
			r.Capabilities = append(r.Capabilities, string(c))
		}
		if e, ok := t.(targets.Exec); ok {
			r.Profile = e.Profile
		}
	}
	return r
}
