package runtimes

import (
	"context"
	"fmt"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// InProcess runs fake backends inside the test process (fakebackends.Start).
// It is the default runtime. It serves streamable HTTP and SSE; Kill, Pause
// and Resume are not supported (use crash and stall faults, or Process).
type InProcess struct {
	// Options are passed to fakebackends.Start.
	Options []fakebackends.Option
}

// Name returns "in-process".
func (InProcess) Name() string { return "in-process" }

// Start starts the backend in this process.
func (rt InProcess) Start(ctx context.Context, script *fakebackends.Script) (RunningBackend, error) {
	if script == nil {
		return nil, fmt.Errorf("harness: in-process runtime: nil script")
	}
	s := *script
	if s.Transport == fakebackends.TransportStdio {
		return nil, fmt.Errorf("harness: backend %q: stdio backends need the Process runtime: %w", s.Name, ErrNotSupported)
	}
	ctx, cancel := WithDefaultTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	b, err := fakebackends.Start(ctx, &s, rt.Options...)
	if err != nil {
		return nil, fmt.Errorf("harness: start backend %q in-process: %w", s.Name, err)
	}
	return &inProcessBackend{b: b}, nil
}

// inProcessBackend is a RunningBackend over a *fakebackends.Backend.
type inProcessBackend struct {
	b *fakebackends.Backend
}

// Backend returns the underlying fake backend (for tests that need more
// than RunningBackend offers).
func (ib *inProcessBackend) Backend() *fakebackends.Backend { return ib.b }

func (ib *inProcessBackend) Name() string                      { return ib.b.Name() }
func (ib *inProcessBackend) URL() string                       { return ib.b.URL() }
func (ib *inProcessBackend) AdminURL() string                  { return ib.b.AdminURL() }
func (ib *inProcessBackend) Transport() fakebackends.Transport { return ib.b.Script().Transport }

func (ib *inProcessBackend) Info() BackendInfo {
	s := ib.b.Script()
	return BackendInfo{Name: s.Name, URL: ib.b.URL(), AdminURL: ib.b.AdminURL(), Transport: string(s.Transport), Protocol: string(s.Protocol)}
}

func (ib *inProcessBackend) SetFaults(_ context.Context, faults ...faults.Fault) error {
	return ib.b.SetFaults(faults...)
}

func (ib *inProcessBackend) ClearFaults(context.Context) error {
	ib.b.ClearFaults()
	return nil
}

func (ib *inProcessBackend) ExpireSessions(context.Context) (int, error) {
	return ib.b.ExpireSessions(), nil
}

func (ib *inProcessBackend) Restart(ctx context.Context) error {
	ctx, cancel := WithDefaultTimeout(ctx, DefaultControlTimeout)
	defer cancel()
	return ib.b.Restart(ctx)
}

func (ib *inProcessBackend) Requests(context.Context) ([]fakebackends.RequestRecord, error) {
	return ib.b.Requests(), nil
}

func (ib *inProcessBackend) Kill(context.Context) error {
	return fmt.Errorf("harness: kill backend %q: %w (in-process; use a crash fault or the Process runtime)", ib.Name(), ErrNotSupported)
}

func (ib *inProcessBackend) Pause(context.Context) error {
	return fmt.Errorf("harness: pause backend %q: %w (in-process; use a stall fault or the Process runtime)", ib.Name(), ErrNotSupported)
}

func (ib *inProcessBackend) Resume(context.Context) error {
	return fmt.Errorf("harness: resume backend %q: %w (in-process)", ib.Name(), ErrNotSupported)
}

func (ib *inProcessBackend) Close(ctx context.Context) error {
	return RunBounded(ctx, DefaultCloseTimeout, fmt.Sprintf("harness: close backend %q", ib.Name()), func(context.Context) error {
		return ib.b.Close()
	})
}
