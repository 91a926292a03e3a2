package backend

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// testConn is a live connection with no transport, for driving Invoke with
// a hand-made request function.
func testConn(t *testing.T) *Conn {
	dead, kill := context.WithCancelCause(context.Background())
	t.Cleanup(func() { kill(nil) })
	return &Conn{
		backend:     config.Backend{Name: "beta", Transport: config.TransportStreamableHTTP},
		d:           &Dialer{cfg: &config.Config{}},
		dead:        dead,
		kill:        kill,
		outstanding: map[string]struct{}{},
		closed:      make(chan struct{}),
	}
}

// lagCtx is a caller's context whose ending reaches the contexts derived
// from it late: its Err (and Cause) are those of inner as soon as inner
// ends, but its Done channel closes only when release is called. Derived
// contexts learn of the end through Done, so for a while the caller's
// context has ended while the attempt's context derived from it has not.
// That is the window in which a request function can return (as mcp-go's
// SSE transport does, from its own timer armed for the very same deadline)
// and Invoke reads the caller's Err before the attempt's cause.
type lagCtx struct {
	inner context.Context
	done  chan struct{}
	once  sync.Once
}

func (l *lagCtx) Deadline() (time.Time, bool) { return l.inner.Deadline() }
func (l *lagCtx) Done() <-chan struct{}       { return l.done }
func (l *lagCtx) Err() error                  { return l.inner.Err() }
func (l *lagCtx) Value(key any) any           { return l.inner.Value(key) }
func (l *lagCtx) release()                    { l.once.Do(func() { close(l.done) }) }

// TestInvokeStallAtEqualDeadlinesIsTimeout: issue 12 item 5. A call whose
// transport gives up at the very deadline of the caller's context (mcp-go's
// SSE transport arms a timer for the remaining time to the context's
// deadline) was classified as a client cancel when that deadline's
// cancellation had reached the caller's context but not yet the attempt's:
// "call canceled: canceled by the client", a kind neither health nor
// breaker count. It must be a timeout, whatever the order.
func TestInvokeStallAtEqualDeadlinesIsTimeout(t *testing.T) {
	t.Parallel()
	c := testConn(t)
	const timeout = 50 * time.Millisecond
	inner, cancel := context.WithTimeoutCause(context.Background(), timeout, ErrCallTimeout)
	defer cancel()
	caller := &lagCtx{inner: inner, done: make(chan struct{})}
	// The derived contexts learn of the end at most this late: long enough
	// that Invoke, when it does not wait, reads the caller's state first.
	go func() {
		<-inner.Done()
		time.Sleep(200 * time.Millisecond)
		caller.release()
	}()
	defer caller.release()

	start := time.Now()
	be := c.Invoke(caller, "tools/call", timeout, func(ctx context.Context) error {
		<-inner.Done() // mcp-go's timer for the same deadline
		return errors.New("timeout waiting for SSE response after 50ms")
	})
	d := time.Since(start)
	if be == nil {
		t.Fatal("Invoke succeeded, want a timeout")
	}
	if be.Kind != KindTimeout || be.Cause != "timed out after 50ms" || !errors.Is(be, context.DeadlineExceeded) || !errors.Is(be, ErrUnavailable) {
		t.Fatalf("got %s (kind %s) after %v; want kind timeout, %q", be, be.Kind, d, `backend "beta" unavailable: timed out after 50ms`)
	}
	if d > 5*time.Second {
		t.Errorf("Invoke took %v", d)
	}
}

// TestInvokeCallerDeadlineIsTimeout: a caller's own deadline (a keepalive
// probe's timeout, a Go API user's context) ending a stalled request is a
// timeout, not a client cancel; a caller's cancel stays a cancel.
func TestInvokeCallerDeadlineIsTimeout(t *testing.T) {
	t.Parallel()
	c := testConn(t)
	stall := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	be := c.Invoke(ctx, "ping", time.Minute, stall)
	if be == nil || be.Kind != KindTimeout || !errors.Is(be, context.DeadlineExceeded) {
		t.Fatalf("caller's deadline: got %v, want kind timeout", be)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	be = c.Invoke(ctx, "ping", time.Minute, stall)
	if be == nil || be.Kind != KindCanceled || be.Cause != "canceled by the client" {
		t.Fatalf("caller's cancel: got %v, want kind canceled", be)
	}
}
