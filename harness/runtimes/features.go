package runtimes

import "time"

// Features are optional gateway features a topology asks for: a health
// monitor, a circuit breaker, per-backend keepalive, Prometheus metrics and
// the optimizer. Targets pass them to their config template as
// TemplateData.Features (and each backend's keepalive as
// BackendInfo.Keepalive); ChaosVMCPTemplate renders them as the reference
// gateway's `health`, `breaker`, `backends[].keepalive`, `metrics` and
// `optimizer` sections and MaxSessions as `limits.maxSessions`. The zero value asks for none. A scenario that needs
// a feature also declares the matching capability, so a target that cannot
// honour it is skipped, never configured wrongly.
type Features struct {
	// Health, when set, turns the health monitor on.
	Health *HealthFeature
	// Breaker, when set, turns the per-backend circuit breaker on.
	Breaker *BreakerFeature
	// Keepalive configures keepalive probes, by backend name.
	Keepalive map[string]KeepaliveFeature
	// Metrics serves Prometheus metrics at GET /metrics.
	Metrics bool
	// Optimizer replaces the tool list with find_tool and call_tool.
	Optimizer bool
	// OptimizerMaxResults bounds find_tool's results (0: the gateway's
	// default).
	OptimizerMaxResults int
	// MaxSessions is how many client sessions the gateway must let be
	// open at once (0: the gateway's default), for benchmarks that hold
	// thousands (the reference's limits.maxSessions).
	MaxSessions int
}

// HealthFeature configures the health monitor. Zero fields are left to the
// gateway's defaults.
type HealthFeature struct {
	Interval           time.Duration
	Timeout            time.Duration
	UnhealthyThreshold int
}

// BreakerFeature configures the circuit breaker. Zero fields are left to
// the gateway's defaults.
type BreakerFeature struct {
	FailureThreshold int
	OpenTimeout      time.Duration
}

// KeepaliveFeature configures one backend's keepalive probes. Zero fields
// are left to the gateway's defaults.
type KeepaliveFeature struct {
	// Method is "ping" or "tool:<name>".
	Method      string        `json:"method"`
	Interval    time.Duration `json:"interval,omitempty"`
	Jitter      time.Duration `json:"jitter,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	MaxFailures int           `json:"maxFailures,omitempty"`
	ProbeAfter  time.Duration `json:"probeAfter,omitempty"`
}

// Names lists the features f turns on, in a fixed order (health, breaker,
// keepalive, metrics, optimizer); none for the zero value.
func (f Features) Names() []string {
	var out []string
	if f.Health != nil {
		out = append(out, "health")
	}
	if f.Breaker != nil {
		out = append(out, "breaker")
	}
	if len(f.Keepalive) > 0 {
		out = append(out, "keepalive")
	}
	if f.Metrics {
		out = append(out, "metrics")
	}
	if f.Optimizer {
		out = append(out, "optimizer")
	}
	return out
}

// FeatureSet is one distinct set of features a catalogue renders into a
// target's config, with the scenarios that render it.
type FeatureSet struct {
	// Name lists the features, e.g. "breaker, metrics".
	Name string
	// Features are the features exactly as the scenarios ask for them.
	Features Features
	// Scenarios are the scenarios that render this set.
	Scenarios []string
}
