package config

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Defaults and bounds of the limits that keep one gateway within a small
// machine's means (2 cores, 24 GiB): each session holds its own copy of
// every backend's tool list (about 3.5 KB per tool, measured), so the worst
// case is about MaxSessions × backends × MaxToolsPerBackend × 3.5 KB, which
// the defaults keep near 1.75 GB per backend.
const (
	// DefaultMaxToolsPerBackend is limits.maxToolsPerBackend's default:
	// generous for real servers (tens to hundreds of tools).
	DefaultMaxToolsPerBackend = 1000
	// MaxMaxToolsPerBackend is the largest limits.maxToolsPerBackend.
	MaxMaxToolsPerBackend = 100_000
	// DefaultMaxSessions is limits.maxSessions's default.
	DefaultMaxSessions = 500
	// MaxMaxSessions is the largest limits.maxSessions.
	MaxMaxSessions = 100_000
	// MaxMaxResponseBytes is the largest limits.maxResponseBytes (1 GiB):
	// one message larger than that is no longer a response but a memory
	// exhaustion.
	MaxMaxResponseBytes = 1 << 30
	// MaxPoolSize is the largest pool.size.
	MaxPoolSize = 10_000
)

// Duration bounds: values below the minimum turn a timer into a busy loop
// (health.interval: 1ns probed 295,880 times in 3 s), values above the
// maximum are typos.
var (
	// SessionIdleRange bounds timeouts.sessionIdle.
	SessionIdleRange = DurationRange{Min: 100 * time.Millisecond, Max: 24 * time.Hour}
	// HealthIntervalRange bounds health.interval.
	HealthIntervalRange = DurationRange{Min: 10 * time.Millisecond, Max: 24 * time.Hour}
	// KeepaliveIntervalRange bounds backends[].keepalive.interval.
	KeepaliveIntervalRange = DurationRange{Min: 10 * time.Millisecond, Max: 24 * time.Hour}
)

// DurationRange is an inclusive range of durations.
type DurationRange struct{ Min, Max time.Duration }

func (r DurationRange) check(v time.Duration) error {
	if v < r.Min || v > r.Max {
		return fmt.Errorf("%s is out of range: allowed %s to %s", v, r.Min, r.Max)
	}
	return nil
}

// validateBounds refuses values that are well-formed but absurd: durations
// that make timers spin, limits out of range, ports that cannot exist and
// header names or values HTTP cannot carry.
func validateBounds(d decoder, cfg *Config) error {
	if err := SessionIdleRange.check(cfg.Timeouts.SessionIdle); err != nil {
		return d.errf("timeouts.sessionIdle", "%v", err)
	}
	if cfg.Health.Enabled {
		if err := HealthIntervalRange.check(cfg.Health.Interval); err != nil {
			return d.errf("health.interval", "%v", err)
		}
	}
	l := cfg.Limits
	if l.MaxToolsPerBackend < 1 || l.MaxToolsPerBackend > MaxMaxToolsPerBackend {
		return d.errf("limits.maxToolsPerBackend", "%d is out of range: allowed 1 to %d", l.MaxToolsPerBackend, MaxMaxToolsPerBackend)
	}
	if l.MaxSessions < 1 || l.MaxSessions > MaxMaxSessions {
		return d.errf("limits.maxSessions", "%d is out of range: allowed 1 to %d", l.MaxSessions, MaxMaxSessions)
	}
	if l.MaxResponseBytes < 1 || l.MaxResponseBytes > MaxMaxResponseBytes {
		return d.errf("limits.maxResponseBytes", "%d is out of range: allowed 1 to %d (1GiB)", l.MaxResponseBytes, MaxMaxResponseBytes)
	}
	if cfg.Pool.Size < 1 || cfg.Pool.Size > MaxPoolSize {
		return d.errf("pool.size", "%d is out of range: allowed 1 to %d", cfg.Pool.Size, MaxPoolSize)
	}
	for i, b := range cfg.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		if b.Keepalive.Method != "none" {
			if err := KeepaliveIntervalRange.check(b.Keepalive.Interval); err != nil {
				return d.errf(p+".keepalive.interval", "%v", err)
			}
		}
		if b.URL != "" {
			if u, err := url.Parse(b.URL); err == nil && u.Port() != "" {
				if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
					return d.errf(p+".url", "invalid URL %q: port %s is out of range: allowed 1 to 65535", b.URL, u.Port())
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(b.Headers)) {
			if !httpguts.ValidHeaderFieldName(name) {
				return d.errf(p+".headers", "%q is not a valid HTTP header name: use letters, digits and !#$%%&'*+-.^_`|~", name)
			}
			if !httpguts.ValidHeaderFieldValue(b.Headers[name]) {
				return d.errf(p+".headers."+name, "the value is not a valid HTTP header value (control characters such as a newline are not allowed)")
			}
		}
	}
	return nil
}
