// Package keepalive probes one backend session on an interval with jitter,
// disables itself after repeated failures and re-enables after a later
// successful probe.
package keepalive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// Failure reasons, as reported to the Recorder (and the `reason` metric
// attribute).
const (
	ReasonPingFailed        = "ping_failed"
	ReasonToolCallFailed    = "tool_call_failed"
	ReasonTimeout           = "timeout"
	ReasonToolNotConfigured = "keepalive_tool_name_not_configured"
)

// Method is how a session is probed: ping, a tool call, or not at all.
type Method struct {
	// Kind is "ping", "tool" or "none".
	Kind string
	// Tool is the tool to call when Kind is "tool".
	Tool string
}

// ParseMethod parses "ping", "tool:<name>" or "none" ("" is none).
func ParseMethod(s string) (Method, error) {
	kind, tool, err := config.ProbeMethod(cmp.Or(s, "none"), false, true)
	if err != nil {
		return Method{}, fmt.Errorf("keepalive method %q: want ping, tool:<name> or none", s)
	}
	return Method{Kind: kind, Tool: tool}, nil
}

// String renders the method as ParseMethod reads it.
func (m Method) String() string {
	if m.Kind == "tool" {
		return "tool:" + m.Tool
	}
	return cmp.Or(m.Kind, "none")
}

// Config configures one keeper.
type Config struct {
	Method   Method
	Interval time.Duration
	// Jitter spreads probes over Interval ± Jitter (default Interval/10).
	Jitter time.Duration
	// Timeout bounds one probe (default Interval, at most 10s).
	Timeout time.Duration
	// MaxFailures consecutive failures disable keepalive (default 3).
	MaxFailures int
	// ProbeAfter is how long a disabled keeper waits before probing again
	// (default 10 × Interval).
	ProbeAfter time.Duration
	// Rand returns numbers in [0, 1) for jitter (default: math/rand's).
	Rand func() float64
}

func (c *Config) defaults() {
	c.Jitter = cmp.Or(c.Jitter, c.Interval/10)
	c.Timeout = cmp.Or(c.Timeout, min(c.Interval, 10*time.Second))
	if c.MaxFailures < 1 {
		c.MaxFailures = 3
	}
	c.ProbeAfter = cmp.Or(c.ProbeAfter, 10*c.Interval)
	if c.Rand == nil {
		c.Rand = rand.Float64 // safe for concurrent use, randomly seeded
	}
}

// Target is the backend session a keeper probes.
type Target interface {
	Ping(ctx context.Context) error
	CallTool(ctx context.Context, name string) error
	HasTool(name string) bool
}

// Recorder is told about every probe (metrics hook in here).
type Recorder interface {
	Attempt()
	Success(latency time.Duration)
	Failure(reason string, latency time.Duration)
	AutoDisabled()
}

// Exclusive runs fn so that it never overlaps a re-initialization of the
// same backend session. nil runs fn directly.
type Exclusive func(ctx context.Context, fn func(ctx context.Context) error) error

// Status is a keeper's state for status APIs.
type Status struct {
	Enabled             bool   `json:"enabled"`
	ConsecutiveFailures int    `json:"consecutiveFailures"`
	LastError           string `json:"lastError,omitempty"`
}

// Keeper runs one session's keepalive. Stop it with Stop.
type Keeper struct {
	cfg       Config
	target    Target
	rec       Recorder
	exclusive Exclusive

	mu sync.Mutex
	st Status

	cancel context.CancelFunc
	done   chan struct{}
}

// Start starts keepalive for one backend session. With method none it does
// nothing. With a tool the backend does not have it records one failure
// (ReasonToolNotConfigured) and stays disabled.
func Start(parent context.Context, cfg Config, target Target, rec Recorder, exclusive Exclusive) *Keeper {
	cfg.defaults()
	ctx, cancel := context.WithCancel(parent)
	k := &Keeper{cfg: cfg, target: target, rec: rec, exclusive: exclusive, cancel: cancel, done: make(chan struct{})}
	if exclusive == nil {
		k.exclusive = func(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }
	}
	switch {
	case cfg.Method.Kind == "none" || cfg.Method.Kind == "" || cfg.Interval <= 0:
		close(k.done)
		return k
	case cfg.Method.Kind == "tool" && !target.HasTool(cfg.Method.Tool):
		rec.Attempt()
		rec.Failure(ReasonToolNotConfigured, 0)
		k.st = Status{ConsecutiveFailures: 1, LastError: fmt.Sprintf("backend has no tool %q", cfg.Method.Tool)}
		close(k.done)
		return k
	}
	k.st.Enabled = true
	go k.run(ctx)
	return k
}

// firstDelay is the random delay before the first probe: [0, Interval/4).
func (k *Keeper) firstDelay() time.Duration {
	return time.Duration(k.cfg.Rand() * float64(k.cfg.Interval/4))
}

// nextDelay is Interval ± Jitter.
func (k *Keeper) nextDelay() time.Duration {
	return k.cfg.Interval + time.Duration((k.cfg.Rand()*2-1)*float64(k.cfg.Jitter))
}

// untilNext is the wait before the next probe when the previous one was
// sent took ago: probes are sent every Interval ± Jitter, whatever each
// took (a slow backend or a loaded machine must not stretch the cadence
// by each probe's round trip), and at once when a probe took longer.
func (k *Keeper) untilNext(took time.Duration) time.Duration {
	return max(0, k.nextDelay()-took)
}

func (k *Keeper) run(ctx context.Context) {
	defer close(k.done)
	t := time.NewTimer(k.firstDelay())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		enabled, sent := k.probe(ctx)
		if ctx.Err() != nil {
			return
		}
		if enabled {
			t.Reset(k.untilNext(time.Since(sent)))
		} else {
			t.Reset(k.cfg.ProbeAfter)
		}
	}
}

// probe runs one probe and returns whether keepalive is enabled after it,
// and when the probe was sent (after any wait for the session's exclusive
// use: a probe held up by a re-initialization does not bring the next one
// forward).
func (k *Keeper) probe(ctx context.Context) (enabled bool, sent time.Time) {
	k.rec.Attempt()
	start := time.Now()
	sent = start
	var probeErr error
	err := k.exclusive(ctx, func(ctx context.Context) error {
		sent = time.Now()
		pctx, cancel := context.WithTimeout(ctx, k.cfg.Timeout)
		defer cancel()
		if k.cfg.Method.Kind == "tool" {
			probeErr = k.target.CallTool(pctx, k.cfg.Method.Tool)
		} else {
			probeErr = k.target.Ping(pctx)
		}
		if probeErr != nil && pctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			probeErr = fmt.Errorf("%w: %w", context.DeadlineExceeded, probeErr)
		}
		return probeErr
	})
	latency := time.Since(start)
	if ctx.Err() != nil && err != nil {
		return false, sent // stopping: not a result
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if err == nil {
		k.rec.Success(latency)
		k.st = Status{Enabled: true}
		return true, sent
	}
	reason := ReasonPingFailed
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		reason = ReasonTimeout
	case k.cfg.Method.Kind == "tool":
		reason = ReasonToolCallFailed
	}
	k.rec.Failure(reason, latency)
	k.st.ConsecutiveFailures++
	k.st.LastError = err.Error()
	if k.st.Enabled && k.st.ConsecutiveFailures >= k.cfg.MaxFailures {
		k.st.Enabled = false
		k.rec.AutoDisabled()
	}
	return k.st.Enabled, sent
}

// Status returns the keeper's state.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.st
}

// Stop ends keepalive and waits for a probe in progress (bounded by the
// probe timeout).
func (k *Keeper) Stop() {
	k.cancel()
	<-k.done
}
