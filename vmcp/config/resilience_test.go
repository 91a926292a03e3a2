package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseResilienceSections(t *testing.T) {
	src := `backends:
  - {name: alpha, url: "http://127.0.0.1:1/mcp", probe: ping, keepalive: {method: "tool:echo", interval: 5m, maxFailures: 3, probeAfter: 30m}}
  - {name: beta, url: "http://127.0.0.1:2/mcp"}
health: {interval: 30s, timeout: 10s, unhealthyThreshold: 3, degradedThreshold: 5s}
breaker: {enabled: true, failureThreshold: 5, openTimeout: 60s}
metrics: {prometheus: true}
optimizer: {enabled: true, maxResults: 5}
`
	cfg, err := ParseWithEnv([]byte(src), "r.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Health.Enabled || cfg.Health.DegradedThreshold != 5*time.Second || !cfg.Breaker.Enabled || cfg.Breaker.OpenTimeout != time.Minute ||
		!cfg.Metrics.Prometheus || !cfg.Optimizer.Enabled || cfg.Optimizer.MaxResults != 5 {
		t.Errorf("sections = %+v %+v %+v %+v", cfg.Health, cfg.Breaker, cfg.Metrics, cfg.Optimizer)
	}
	a, b := cfg.Backends[0], cfg.Backends[1]
	if a.Probe != "ping" || a.Keepalive.Method != "tool:echo" || a.Keepalive.ProbeAfter != 30*time.Minute || a.Keepalive.Timeout != 10*time.Second {
		t.Errorf("alpha = %+v", a)
	}
	if b.Probe != DefaultProbe || b.Keepalive.Method != "none" {
		t.Errorf("beta defaults = %+v", b)
	}
}

func TestResilienceOffUnlessConfigured(t *testing.T) {
	cfg, err := ParseWithEnv([]byte("backends: [{name: a, url: 'http://x/mcp'}]\nhealth: {enabled: false}\n"), "", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Health.Enabled || cfg.Breaker.Enabled || cfg.Optimizer.Enabled || cfg.Metrics.Prometheus {
		t.Errorf("off by default: %+v %+v", cfg.Health, cfg.Breaker)
	}
	if cfg.Health.Interval != DefaultHealthInterval || cfg.Breaker.FailureThreshold != DefaultFailureThreshold {
		t.Errorf("defaults %+v %+v", cfg.Health, cfg.Breaker)
	}
}

func TestResilienceErrors(t *testing.T) {
	head := "backends:\n  - name: a\n    url: http://x/mcp\n"
	cases := []struct{ name, src, want string }{
		{"timeout not below interval", head + "health: {interval: 1s, timeout: 1s}\n", `f.yaml:4: health.timeout: must be shorter than health.interval`},
		{"zero threshold", head + "health: {unhealthyThreshold: 0}\n", `f.yaml:4: health.unhealthyThreshold: must be at least 1`},
		{"failure threshold", head + "breaker: {failureThreshold: -1}\n", `f.yaml:4: breaker.failureThreshold: must be at least 1`},
		{"open timeout too short", head + "breaker: {openTimeout: 1ms}\n", `f.yaml:4: breaker.openTimeout: must be at least 10ms`},
		{"bad probe", head + "    probe: pong\n", `f.yaml:4: backends[0].probe: unknown method "pong"`},
		{"bad keepalive method", head + "    keepalive: {method: list}\n", `f.yaml:4: backends[0].keepalive.method: unknown method "list"`},
		{"keepalive timeout over interval", head + "    keepalive: {method: ping, interval: 1s, timeout: 2s}\n", `f.yaml:4: backends[0].keepalive.timeout: must not exceed keepalive.interval`},
		{"unknown breaker key", head + "breaker: {threshold: 3}\n", `f.yaml:4: breaker.threshold: unknown field "threshold"`},
		{"bool typo", head + "metrics: {prometheus: yes please}\n", `f.yaml:4: metrics.prometheus: want true or false`},
		{"optimizer results", head + "optimizer: {enabled: true, maxResults: 0}\n", `f.yaml:4: optimizer.maxResults: must be at least 1`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseWithEnv([]byte(c.src), "f.yaml", env(nil))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error %v, want prefix %q", err, c.want)
			}
		})
	}
}
