package config

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// Defaults of the resilience sections.
const (
	DefaultHealthInterval     = 30 * time.Second
	DefaultHealthTimeout      = 10 * time.Second
	DefaultUnhealthyThreshold = 3
	DefaultFailureThreshold   = 5
	DefaultOpenTimeout        = 60 * time.Second
	MinOpenTimeout            = 10 * time.Millisecond
	DefaultProbe              = "list"
	DefaultKeepaliveMaxFail   = 3
	DefaultOptimizerResults   = 8
)

// Health configures the gateway-wide health monitor. It runs when the
// `health` section is present (unless `enabled: false`).
type Health struct {
	Enabled            bool          `json:"enabled"`
	Interval           time.Duration `json:"interval" yaml:"interval,positive"`
	Timeout            time.Duration `json:"timeout" yaml:"timeout,positive"`
	UnhealthyThreshold int           `json:"unhealthyThreshold" yaml:"unhealthyThreshold,positive"`
	// DegradedThreshold marks slower successful probes degraded (0: never).
	DegradedThreshold time.Duration `json:"degradedThreshold,omitempty"`
}

// Breaker configures the per-backend circuit breaker. It runs when the
// `breaker` section is present (unless `enabled: false`).
type Breaker struct {
	Enabled          bool          `json:"enabled"`
	FailureThreshold int           `json:"failureThreshold" yaml:"failureThreshold,positive"`
	OpenTimeout      time.Duration `json:"openTimeout" yaml:"openTimeout,positive"`
}

// Keepalive configures per-session keepalive probes of one backend.
type Keepalive struct {
	// Method is "ping", "tool:<name>" or "none" (default).
	Method      string        `json:"method"`
	Interval    time.Duration `json:"interval,omitempty" yaml:"interval,positive"`
	Jitter      time.Duration `json:"jitter,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty" yaml:"timeout,positive"`
	MaxFailures int           `json:"maxFailures,omitempty" yaml:"maxFailures,positive"`
	ProbeAfter  time.Duration `json:"probeAfter,omitempty" yaml:"probeAfter,positive"`
}

// Metrics configures metric export.
type Metrics struct {
	// Prometheus serves GET /metrics.
	Prometheus bool `json:"prometheus"`
}

// Optimizer replaces the tool list with find_tool and call_tool.
type Optimizer struct {
	// Enabled makes every client's tools/list show only find_tool and
	// call_tool: find_tool searches (BM25) the tools of the backends
	// admitted to the caller's view, call_tool calls one of them by name.
	Enabled bool `json:"enabled"`
	// MaxResults is the most tools one find_tool call returns (a positive
	// integer; DefaultOptimizerResults, 8, when unset).
	MaxResults int `json:"maxResults" yaml:"maxResults,positive"`
}

// Notifications configures notifications to live client sessions.
type Notifications struct {
	// ListChanged sends notifications/tools/list_changed to live sessions
	// when a backend leaves (unhealthy, circuit open) or rejoins, and
	// changes their tool lists accordingly.
	ListChanged bool `json:"listChanged"`
}

func applyResilienceDefaults(cfg *Config) {
	h := &cfg.Health
	h.Interval = cmp.Or(h.Interval, DefaultHealthInterval)
	h.Timeout = cmp.Or(h.Timeout, min(DefaultHealthTimeout, h.Interval/2))
	h.UnhealthyThreshold = cmp.Or(h.UnhealthyThreshold, DefaultUnhealthyThreshold)
	b := &cfg.Breaker
	b.FailureThreshold = cmp.Or(b.FailureThreshold, DefaultFailureThreshold)
	b.OpenTimeout = cmp.Or(b.OpenTimeout, DefaultOpenTimeout)
	cfg.Optimizer.MaxResults = cmp.Or(cfg.Optimizer.MaxResults, DefaultOptimizerResults)
	for i := range cfg.Backends {
		be := &cfg.Backends[i]
		be.Probe = cmp.Or(be.Probe, DefaultProbe)
		k := &be.Keepalive
		k.Method = cmp.Or(k.Method, "none")
		if k.Method != "none" {
			k.Interval = cmp.Or(k.Interval, 5*time.Minute)
			k.Timeout = cmp.Or(k.Timeout, min(10*time.Second, k.Interval))
			k.MaxFailures = cmp.Or(k.MaxFailures, DefaultKeepaliveMaxFail)
			k.ProbeAfter = cmp.Or(k.ProbeAfter, 10*k.Interval)
		}
	}
}

// ProbeMethod reports a probe or keepalive method's kind ("ping", "list",
// "tool", "none") and tool name, or an error for an unknown method.
func ProbeMethod(s string, allowList, allowNone bool) (kind, tool string, err error) {
	if tool, ok := strings.CutPrefix(s, "tool:"); ok && tool != "" {
		return "tool", tool, nil
	}
	if s == "ping" || (s == "list" && allowList) || (s == "none" && allowNone) {
		return s, "", nil
	}
	want := "ping or tool:<name>"
	if allowList {
		want = "ping, list or tool:<name>"
	}
	if allowNone {
		want += " or none"
	}
	return "", "", fmt.Errorf("unknown method %q: use %s", s, want)
}

func validateResilience(d decoder, cfg *Config) error {
	h := cfg.Health
	if h.Timeout >= h.Interval {
		return d.errf("health.timeout", "must be shorter than health.interval (%s), got %s", h.Interval, h.Timeout)
	}
	if cfg.Breaker.OpenTimeout < MinOpenTimeout {
		return d.errf("breaker.openTimeout", "must be at least %s, got %s", MinOpenTimeout, cfg.Breaker.OpenTimeout)
	}
	for i, b := range cfg.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		if _, _, err := ProbeMethod(b.Probe, true, false); err != nil {
			return d.errf(p+".probe", "%v", err)
		}
		k := b.Keepalive
		if _, _, err := ProbeMethod(k.Method, false, true); err != nil {
			return d.errf(p+".keepalive.method", "%v", err)
		}
		if k.Method != "none" {
			if k.Timeout > k.Interval {
				return d.errf(p+".keepalive.timeout", "must not exceed keepalive.interval (%s), got %s", k.Interval, k.Timeout)
			}
			if k.Jitter >= k.Interval {
				return d.errf(p+".keepalive.jitter", "must be shorter than keepalive.interval (%s), got %s", k.Interval, k.Jitter)
			}
		}
	}
	return nil
}
