package config

import (
	"fmt"
	"sort"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Error is a configuration error located in a file: "FILE:LINE: FIELD: MSG",
// e.g. `vmcp.yaml:12: backends[1].url: invalid URL "ftp://x": scheme must
// be http or https` (the strict YAML package's one located error type).
type Error = strictyaml.Error

// decoder locates errors: the strict YAML decoder of the file knows the
// line of every field.
type decoder struct{ *strictyaml.Decoder }

func (d decoder) errf(field, format string, args ...any) *Error {
	return d.Errf(nil, field, format, args...)
}

// SetLine records the line a backend's entry starts on.
func (b *Backend) SetLine(line int) { b.Line = line }

// checkPresent refuses explicit values that decode but mean nothing: a
// zero or negative count, size or duration where a positive one is needed
// (leaving a field out gives its default).
func (d decoder) checkPresent(cfg *Config) error {
	ints := map[string]int{
		"pool.size": cfg.Pool.Size, "health.unhealthyThreshold": cfg.Health.UnhealthyThreshold,
		"breaker.failureThreshold": cfg.Breaker.FailureThreshold, "optimizer.maxResults": cfg.Optimizer.MaxResults,
	}
	durations := map[string]time.Duration{
		"timeouts.initialize": cfg.Timeouts.Initialize, "timeouts.call": cfg.Timeouts.Call, "timeouts.list": cfg.Timeouts.List,
		"timeouts.close": cfg.Timeouts.Close, "timeouts.sessionIdle": cfg.Timeouts.SessionIdle,
		"health.interval": cfg.Health.Interval, "health.timeout": cfg.Health.Timeout, "breaker.openTimeout": cfg.Breaker.OpenTimeout,
	}
	for i, b := range cfg.Backends {
		p := fmt.Sprintf("backends[%d].keepalive.", i)
		ints[p+"maxFailures"] = b.Keepalive.MaxFailures
		durations[p+"interval"], durations[p+"timeout"], durations[p+"probeAfter"] = b.Keepalive.Interval, b.Keepalive.Timeout, b.Keepalive.ProbeAfter
	}
	for _, field := range sortedFields(ints) {
		if v := ints[field]; d.Has(field) && v <= 0 {
			return d.errf(field, "must be at least 1, got %d", v)
		}
	}
	for _, field := range sortedFields(durations) {
		if v := durations[field]; d.Has(field) && v == 0 {
			return d.errf(field, "must be positive, got 0s")
		}
	}
	if d.Has("limits.maxResponseBytes") && cfg.Limits.MaxResponseBytes <= 0 {
		return d.errf("limits.maxResponseBytes", "must be a positive size such as 1048576 or 4MiB, got 0")
	}
	return nil
}

func sortedFields[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
