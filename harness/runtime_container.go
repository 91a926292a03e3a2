package harness

import (
	"context"
	"net/http"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// This file holds what the container runtime (package harness/containers)
// needs from harness without harness importing a Docker client: the error
// that turns a missing precondition into a skipped scenario, and the fake
// backends' control API client.

// SkipError says the environment lacks something a scenario needs that is
// not a gateway capability (no Docker engine, a target that cannot run in a
// container). Runners skip the scenario with Reason; they never pass it.
// Where the environment promises it (VMCP_CHAOS_REQUIRE_DOCKER=1), the
// runtime returns an ordinary error instead, and the scenario fails.
type SkipError struct {
	// Reason says what is missing.
	Reason string
}

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// AdminAPI is a client of a fake backend's control API (`chaos backend
// --admin`), for runtimes outside this package. Every call has a deadline
// (its ctx, else DefaultControlTimeout).
type AdminAPI struct{ a *adminClient }

// NewAdminAPI returns a client of the control API at base (e.g.
// http://127.0.0.1:41234) sending token as a bearer token ("" for none).
func NewAdminAPI(base, token string) *AdminAPI { return &AdminAPI{a: newAdminClient(base, token)} }

// SetFaults replaces every fault in force.
func (x *AdminAPI) SetFaults(ctx context.Context, faults ...fakebackends.Fault) error {
	return x.a.setFaults(ctx, http.MethodPut, faults)
}

// AddFaults adds faults after those in force.
func (x *AdminAPI) AddFaults(ctx context.Context, faults ...fakebackends.Fault) error {
	return x.a.setFaults(ctx, http.MethodPost, faults)
}

// ClearFaults removes every fault.
func (x *AdminAPI) ClearFaults(ctx context.Context) error { return x.a.clearFaults(ctx) }

// ExpireSessions makes the backend forget its sessions.
func (x *AdminAPI) ExpireSessions(ctx context.Context) (int, error) { return x.a.expire(ctx) }

// Restart restarts the backend's MCP server behind the same listener.
func (x *AdminAPI) Restart(ctx context.Context) error { return x.a.restart(ctx) }

// Requests returns the backend's request log.
func (x *AdminAPI) Requests(ctx context.Context) ([]fakebackends.RequestRecord, error) {
	return x.a.requests(ctx)
}

// Healthz answers nil once the control API serves.
func (x *AdminAPI) Healthz(ctx context.Context) error { return x.a.healthz(ctx) }
