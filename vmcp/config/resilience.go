package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
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
	Interval           time.Duration `json:"interval"`
	Timeout            time.Duration `json:"timeout"`
	UnhealthyThreshold int           `json:"unhealthyThreshold"`
	// DegradedThreshold marks slower successful probes degraded (0: never).
	DegradedThreshold time.Duration `json:"degradedThreshold,omitempty"`
}

// Breaker configures the per-backend circuit breaker. It runs when the
// `breaker` section is present (unless `enabled: false`).
type Breaker struct {
	Enabled          bool          `json:"enabled"`
	FailureThreshold int           `json:"failureThreshold"`
	OpenTimeout      time.Duration `json:"openTimeout"`
}

// Keepalive configures per-session keepalive probes of one backend.
type Keepalive struct {
	// Method is "ping", "tool:<name>" or "none" (default).
	Method      string        `json:"method"`
	Interval    time.Duration `json:"interval,omitempty"`
	Jitter      time.Duration `json:"jitter,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	MaxFailures int           `json:"maxFailures,omitempty"`
	ProbeAfter  time.Duration `json:"probeAfter,omitempty"`
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
	MaxResults int `json:"maxResults"`
}

// Notifications configures notifications to live client sessions.
type Notifications struct {
	// ListChanged sends notifications/tools/list_changed to live sessions
	// when a backend leaves (unhealthy, circuit open) or rejoins, and
	// changes their tool lists accordingly.
	ListChanged bool `json:"listChanged"`
}

func (d *decoder) boolean(dst *bool) fieldFunc {
	return func(n *yaml.Node, path string) error {
		v, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || err != nil {
			return d.errf(n, path, "must be true or false, got %s", kindName(n))
		}
		*dst = v
		return nil
	}
}

// optionalDuration accepts 0 as "not set".
func (d *decoder) optionalDuration(dst *time.Duration) fieldFunc {
	return func(n *yaml.Node, path string) error {
		if n.Kind == yaml.ScalarNode && n.Value == "0" {
			*dst = 0
			return nil
		}
		return d.duration(dst)(n, path)
	}
}

func (d *decoder) health(h *Health) fieldFunc {
	return func(n *yaml.Node, path string) error {
		h.Enabled = true
		return d.mapping(n, path, map[string]fieldFunc{
			"enabled":            d.boolean(&h.Enabled),
			"interval":           d.duration(&h.Interval),
			"timeout":            d.duration(&h.Timeout),
			"unhealthyThreshold": d.positiveInt(&h.UnhealthyThreshold),
			"degradedThreshold":  d.optionalDuration(&h.DegradedThreshold),
		})
	}
}

func (d *decoder) breaker(b *Breaker) fieldFunc {
	return func(n *yaml.Node, path string) error {
		b.Enabled = true
		return d.mapping(n, path, map[string]fieldFunc{
			"enabled":          d.boolean(&b.Enabled),
			"failureThreshold": d.positiveInt(&b.FailureThreshold),
			"openTimeout":      d.duration(&b.OpenTimeout),
		})
	}
}

func (d *decoder) keepalive(k *Keepalive) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{
			"method":      d.str(&k.Method),
			"interval":    d.duration(&k.Interval),
			"jitter":      d.optionalDuration(&k.Jitter),
			"timeout":     d.duration(&k.Timeout),
			"maxFailures": d.positiveInt(&k.MaxFailures),
			"probeAfter":  d.duration(&k.ProbeAfter),
		})
	}
}

func (d *decoder) metrics(m *Metrics) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{"prometheus": d.boolean(&m.Prometheus)})
	}
}

func (d *decoder) optimizer(o *Optimizer) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{
			"enabled":    d.boolean(&o.Enabled),
			"maxResults": d.positiveInt(&o.MaxResults),
		})
	}
}

func (d *decoder) notifications(o *Notifications) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{"listChanged": d.boolean(&o.ListChanged)})
	}
}

func applyResilienceDefaults(cfg *Config) {
	h := &cfg.Health
	if h.Interval == 0 {
		h.Interval = DefaultHealthInterval
	}
	if h.Timeout == 0 {
		h.Timeout = min(DefaultHealthTimeout, h.Interval/2)
	}
	if h.UnhealthyThreshold == 0 {
		h.UnhealthyThreshold = DefaultUnhealthyThreshold
	}
	b := &cfg.Breaker
	if b.FailureThreshold == 0 {
		b.FailureThreshold = DefaultFailureThreshold
	}
	if b.OpenTimeout == 0 {
		b.OpenTimeout = DefaultOpenTimeout
	}
	if cfg.Optimizer.MaxResults == 0 {
		cfg.Optimizer.MaxResults = DefaultOptimizerResults
	}
	for i := range cfg.Backends {
		be := &cfg.Backends[i]
		if be.Probe == "" {
			be.Probe = DefaultProbe
		}
		k := &be.Keepalive
		if k.Method == "" {
			k.Method = "none"
		}
		if k.Method != "none" {
			if k.Interval == 0 {
				k.Interval = 5 * time.Minute
			}
			if k.Timeout == 0 {
				k.Timeout = min(10*time.Second, k.Interval)
			}
			if k.MaxFailures == 0 {
				k.MaxFailures = DefaultKeepaliveMaxFail
			}
			if k.ProbeAfter == 0 {
				k.ProbeAfter = 10 * k.Interval
			}
		}
	}
}

// ProbeMethod reports a probe or keepalive method's kind ("ping", "list",
// "tool", "none") and tool name, or an error for an unknown method.
func ProbeMethod(s string, allowList, allowNone bool) (kind, tool string, err error) {
	switch {
	case s == "ping":
		return "ping", "", nil
	case s == "list" && allowList:
		return "list", "", nil
	case s == "none" && allowNone:
		return "none", "", nil
	case strings.HasPrefix(s, "tool:") && len(s) > len("tool:"):
		return "tool", strings.TrimPrefix(s, "tool:"), nil
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

func validateResilience(d *decoder, root *yaml.Node, cfg *Config) error {
	at := func(path ...string) *yaml.Node { return locate(root, path...) }
	h := cfg.Health
	if h.Timeout >= h.Interval {
		return d.errf(at("health", "timeout"), "health.timeout", "must be shorter than health.interval (%s), got %s", h.Interval, h.Timeout)
	}
	if cfg.Breaker.OpenTimeout < MinOpenTimeout {
		return d.errf(at("breaker", "openTimeout"), "breaker.openTimeout", "must be at least %s, got %s", MinOpenTimeout, cfg.Breaker.OpenTimeout)
	}
	for i, b := range cfg.Backends {
		idx := fmt.Sprint(i)
		p := fmt.Sprintf("backends[%d]", i)
		if _, _, err := ProbeMethod(b.Probe, true, false); err != nil {
			return d.errf(at("backends", idx, "probe"), p+".probe", "%v", err)
		}
		k := b.Keepalive
		if _, _, err := ProbeMethod(k.Method, false, true); err != nil {
			return d.errf(at("backends", idx, "keepalive", "method"), p+".keepalive.method", "%v", err)
		}
		if k.Method != "none" {
			if k.Timeout > k.Interval {
				return d.errf(at("backends", idx, "keepalive", "timeout"), p+".keepalive.timeout", "must not exceed keepalive.interval (%s), got %s", k.Interval, k.Timeout)
			}
			if k.Jitter >= k.Interval {
				return d.errf(at("backends", idx, "keepalive", "jitter"), p+".keepalive.jitter", "must be shorter than keepalive.interval (%s), got %s", k.Interval, k.Jitter)
			}
		}
	}
	return nil
}
