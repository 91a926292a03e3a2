// Package runtimes runs the fake backends of a topology (in this process,
// as `chaos backend` processes, or as containers in runtimes/containers)
// and owns what it spawns: processes, temporary directories, deadlines.
package runtimes

import (
	"context"
	"errors"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// ErrNotSupported is returned (wrapped) by RunningBackend methods that a
// runtime cannot perform, for example Kill on an in-process backend.
var ErrNotSupported = errors.New("not supported by this backend runtime")

// SkipError says the environment lacks something a scenario needs that is
// not a gateway capability (no Docker engine, a target that cannot run in a
// container). Runners skip the scenario with Reason; they never pass it.
// Where the environment promises it (VMCP_CHAOS_REQUIRE_DOCKER=1), the
// runtime returns a *RequiredError instead, and the scenario fails.
type SkipError struct {
	// Reason says what is missing.
	Reason string
}

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// RequiredError is a SkipError's case where the environment promised what
// is missing (Env=1, e.g. VMCP_CHAOS_REQUIRE_DOCKER=1): runners fail the
// scenario with it (a broken promise of the environment), where another
// error starting the harness's own backends makes it inconclusive.
type RequiredError struct {
	// Reason says what is missing; Env names the promise.
	Reason, Env string
}

func (e *RequiredError) Error() string { return e.Reason + " (and " + e.Env + "=1)" }

// BackendRuntime starts fake backends in one way: in this process
// (InProcess), as `chaos backend` processes (Process) or, later, in
// containers. Scenarios only see RunningBackend.
type BackendRuntime interface {
	// Name names the runtime, e.g. "in-process" or "process".
	Name() string
	// Start starts one backend running script and returns once it serves.
	// ctx bounds only the start. The script is not modified.
	Start(ctx context.Context, script *fakebackends.Script) (RunningBackend, error)
}

// RunningBackend is one started fake backend, whatever its runtime. Every
// method that talks to the backend is bounded by its ctx and by a default
// deadline. Methods the runtime cannot perform return an error wrapping
// ErrNotSupported.
type RunningBackend interface {
	// Name is the script's name.
	Name() string
	// URL is the MCP endpoint ("" for a stdio backend, which the gateway
	// spawns itself from Info().Command).
	URL() string
	// AdminURL is the base URL of the backend's control API ("" when
	// there is none).
	AdminURL() string
	// Transport is the backend's MCP transport.
	Transport() fakebackends.Transport
	// Info describes the backend for gateway configuration templates.
	Info() BackendInfo

	// SetFaults replaces every fault in force.
	SetFaults(ctx context.Context, faults ...faults.Fault) error
	// ClearFaults removes every fault (stalls end, a down backend listens
	// again).
	ClearFaults(ctx context.Context) error
	// ExpireSessions makes the backend forget every session now and
	// returns how many it forgot.
	ExpireSessions(ctx context.Context) (int, error)
	// Restart restarts the backend's MCP server behind the same listener
	// (in-flight requests are cut, sessions forgotten, faults kept).
	Restart(ctx context.Context) error
	// Requests returns the backend's request log.
	Requests(ctx context.Context) ([]fakebackends.RequestRecord, error)

	// Kill ends the backend process with SIGKILL (process runtimes only).
	Kill(ctx context.Context) error
	// Pause stops the backend process with SIGSTOP (process runtimes only):
	// its sockets stay open and nothing answers.
	Pause(ctx context.Context) error
	// Resume continues a paused backend process with SIGCONT.
	Resume(ctx context.Context) error

	// Close stops the backend and releases everything it holds. It is
	// bounded by ctx and by a default deadline, and safe to call twice.
	Close(ctx context.Context) error
}

// Respawner is implemented by running backends that can be started again as
// a fresh process on the same addresses, after a Kill or in place of a
// running one (a real process restart).
type Respawner interface {
	// Respawn kills the backend process if it still runs and starts a new
	// one serving the same script on the same MCP and admin addresses.
	Respawn(ctx context.Context) error
}

// BackendInfo describes one backend to a gateway configuration template.
type BackendInfo struct {
	// Name is the backend's name.
	Name string `json:"name"`
	// URL is the MCP endpoint; empty for stdio.
	URL string `json:"url,omitempty"`
	// AdminURL is the control API's base URL.
	AdminURL string `json:"adminUrl,omitempty"`
	// Transport is streamable-http, sse or stdio.
	Transport string `json:"transport"`
	// Protocol is legacy, modern or auto.
	Protocol string `json:"protocol,omitempty"`
	// Command is the argv a gateway runs to spawn a stdio backend.
	Command []string `json:"command,omitempty"`
	// Keepalive is the keepalive the topology asks the gateway to run
	// for this backend (Topology.Features.Keepalive), or nil.
	Keepalive *KeepaliveFeature `json:"keepalive,omitempty"`
	// Tools are the backend's own tool names (from its script), so a
	// target can wait until the gateway lists them.
	Tools []string `json:"tools,omitempty"`
}
