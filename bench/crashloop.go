package bench

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// crashLoop kills a backend process with SIGKILL every period and starts
// it again on the same addresses after a fifth of the period down, as a
// supervisor restarting a crashing server would.
type crashLoop struct {
	b      runtimes.Respawner
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	restarts int
	failures int
	firstErr error
}

// startCrashLoop starts crash-looping b (a process backend). It runs until
// stop or ctx ends.
func startCrashLoop(ctx context.Context, b runtimes.RunningBackend, period time.Duration) (*crashLoop, error) {
	r, ok := b.(runtimes.Respawner)
	if !ok {
		return nil, fmt.Errorf("backend %s cannot be restarted as a process (runtime without Respawn)", b.Name())
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &crashLoop{b: r, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			if !sleepFor(ctx, period-period/5) {
				return
			}
			// A failed kill (the process had already gone) is still
			// followed by a start: Respawn kills whatever runs first.
			kctx, kcancel := context.WithTimeout(ctx, 5*time.Second)
			_ = b.Kill(kctx)
			kcancel()
			if !sleepFor(ctx, period/5) {
				return
			}
			l.respawn(ctx, true)
		}
	}()
	return l, nil
}

// respawn starts the backend again (bounded, even after ctx ended),
// counting it as a restart when counted, and any failure.
func (l *crashLoop) respawn(ctx context.Context, counted bool) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := l.b.Respawn(rctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil && counted:
		l.restarts++
	case err != nil:
		l.failures++
		l.firstErr = cmp.Or(l.firstErr, err)
	}
}

// stop ends the loop and makes sure the backend runs again (it may have
// been stopped between a kill and its restart). It returns the restarts
// and failed restarts, and the first failure (also of that last start).
func (l *crashLoop) stop() (restarts, failures int, first error) {
	l.cancel()
	<-l.done
	if e, ok := l.b.(interface{ Exited() (bool, error) }); ok {
		if gone, _ := e.Exited(); gone {
			l.respawn(context.Background(), false)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.restarts, l.failures, l.firstErr
}

// sleepFor sleeps d; false when ctx ended first.
func sleepFor(ctx context.Context, d time.Duration) bool {
	return faults.SleepCtx(ctx, nil, d) == nil
}
