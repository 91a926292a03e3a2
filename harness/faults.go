package harness

import (
	"context"
	"fmt"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// The fault helpers act on a backend and record a fault event (with the
// error, if the action failed), placed at the moment the action started
// and carrying how long it took. An unknown backend name is an error.

func (e *Env) act(backend, action string, fs []faults.Fault, fn func(runtimes.RunningBackend) error) error {
	rec := history.FaultRecord{Backend: backend, Action: action, Detail: faults.Describe(fs)}
	for _, f := range fs {
		rec.Kinds = append(rec.Kinds, string(f.Kind))
	}
	return e.rec.RecordAction(rec, func() error {
		b := e.byName[backend]
		if b == nil {
			return fmt.Errorf("harness: no backend %q in the topology", backend)
		}
		return fn(b)
	})
}

// SetFaults replaces the backend's faults.
func (e *Env) SetFaults(ctx context.Context, backend string, faults ...faults.Fault) error {
	return e.act(backend, "set", faults, func(b runtimes.RunningBackend) error { return b.SetFaults(ctx, faults...) })
}

// ClearFaults removes every fault of the backend.
func (e *Env) ClearFaults(ctx context.Context, backend string) error {
	return e.act(backend, "clear", nil, func(b runtimes.RunningBackend) error { return b.ClearFaults(ctx) })
}

// KillBackend SIGKILLs a process backend.
func (e *Env) KillBackend(ctx context.Context, backend string) error {
	return e.act(backend, "kill", nil, func(b runtimes.RunningBackend) error { return b.Kill(ctx) })
}

// PauseBackend SIGSTOPs a process backend.
func (e *Env) PauseBackend(ctx context.Context, backend string) error {
	return e.act(backend, "pause", nil, func(b runtimes.RunningBackend) error { return b.Pause(ctx) })
}

// ResumeBackend SIGCONTs a paused process backend.
func (e *Env) ResumeBackend(ctx context.Context, backend string) error {
	return e.act(backend, "resume", nil, func(b runtimes.RunningBackend) error { return b.Resume(ctx) })
}

// RestartBackend restarts the backend's MCP server behind the same
// listener (sessions forgotten).
func (e *Env) RestartBackend(ctx context.Context, backend string) error {
	return e.act(backend, "restart", nil, func(b runtimes.RunningBackend) error { return b.Restart(ctx) })
}

// RespawnBackend starts a fresh process for a process backend (after a
// Kill, or in place of the running one) on the same addresses.
func (e *Env) RespawnBackend(ctx context.Context, backend string) error {
	return e.act(backend, "respawn", nil, func(b runtimes.RunningBackend) error {
		r, ok := b.(runtimes.Respawner)
		if !ok {
			return fmt.Errorf("harness: respawn backend %q: %w", backend, runtimes.ErrNotSupported)
		}
		return r.Respawn(ctx)
	})
}

// ExpireSessions makes the backend forget every session.
func (e *Env) ExpireSessions(ctx context.Context, backend string) error {
	_, err := e.ExpireSessionsCount(ctx, backend)
	return err
}

// ExpireSessionsCount is ExpireSessions, returning how many sessions the
// backend had to expire (0: the gateway kept none open with it, so the
// expiry tested nothing).
func (e *Env) ExpireSessionsCount(ctx context.Context, backend string) (int, error) {
	var n int
	err := e.act(backend, "expire", nil, func(b runtimes.RunningBackend) error {
		var err error
		n, err = b.ExpireSessions(ctx)
		return err
	})
	if err == nil {
		e.Note("%s expired %d session(s)", backend, n)
	}
	return n, err
}
