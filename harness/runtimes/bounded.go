package runtimes

import (
	"context"
	"fmt"
	"time"
)

// Default deadlines applied when a ctx has none.
const (
	// DefaultControlTimeout bounds one control-API request or signal.
	DefaultControlTimeout = 5 * time.Second
	// DefaultCloseTimeout bounds closing one component.
	DefaultCloseTimeout = 10 * time.Second
	// DefaultStartTimeout bounds starting one backend or gateway.
	DefaultStartTimeout = 30 * time.Second
)

// WithDefaultTimeout returns ctx bounded by d unless it already has an
// earlier deadline.
func WithDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// RunBounded runs fn in a goroutine and waits for it until ctx ends (or d,
// when ctx has no earlier deadline). When the wait gives up, fn keeps
// running in the background and RunBounded returns an error naming what.
func RunBounded(ctx context.Context, d time.Duration, what string, fn func(ctx context.Context) error) error {
	ctx, cancel := WithDefaultTimeout(ctx, d)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s: gave up after %v: %w", what, d, ctx.Err())
	}
}

// CloseTimeouter is implemented by a Gateway or RunningBackend whose Close
// may need longer than DefaultCloseTimeout (a container's forced removal
// on a loaded engine). Env.Close bounds its Close by CloseTimeout instead.
type CloseTimeouter interface {
	// CloseTimeout bounds one Close.
	CloseTimeout() time.Duration
}

// CloseTimeoutOf is x's CloseTimeout, or DefaultCloseTimeout.
func CloseTimeoutOf(x any) time.Duration {
	if ct, ok := x.(CloseTimeouter); ok && ct.CloseTimeout() > 0 {
		return ct.CloseTimeout()
	}
	return DefaultCloseTimeout
}
