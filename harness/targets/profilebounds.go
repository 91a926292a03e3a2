package targets

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of a profile's strings and durations: a name shows in every
// table, report and file name; a path, URL, pattern or command word ends
// up in an HTTP request or an argv. None may hold a control character
// (a newline, an ANSI escape, a NUL), and none is longer than its bound.
const (
	maxProfileName   = 256  // name
	maxProfileWord   = 4096 // command words, env entries, URLs and paths
	maxProfileShort  = 256  // configName, toolNames, metric names
	minReadyTimeout  = time.Second
	maxReadyTimeout  = time.Hour
	maxProfileListed = 1000 // command words, env entries, metrics
)

// metricNames are our metric names, the keys of a profile's metrics map:
// the reference gateway's series the scenarios read (a histogram's
// _count, _sum and _bucket series follow its name).
var metricNames = []string{
	"vmcp_backend_health_state", "vmcp_backend_request_duration_seconds", "vmcp_backend_requests_total",
	"vmcp_call_seconds", "vmcp_circuit_breaker_state", "vmcp_circuit_breaker_transitions_total",
	"vmcp_keepalive_attempt_total", "vmcp_keepalive_auto_disabled_total", "vmcp_keepalive_failure_total",
	"vmcp_keepalive_latency_seconds", "vmcp_keepalive_success_total",
}

// validateBounds refuses control characters and oversized strings in
// every string field of the profile, a ready.timeout outside [1s, 1h],
// and a metrics key that is none of our metric names.
func (p *Profile) validateBounds() error {
	if err := p.checkString("name", p.Name, maxProfileName); err != nil {
		return err
	}
	if len(p.Command) > maxProfileListed || len(p.Env) > maxProfileListed || len(p.Metrics) > maxProfileListed {
		return p.errf("command", "more than %d command words, env entries or metrics", maxProfileListed)
	}
	for i, w := range p.Command {
		if err := p.checkString(fmt.Sprintf("command[%d]", i), w, maxProfileWord); err != nil {
			return err
		}
	}
	for i, kv := range p.Env {
		if err := p.checkString(fmt.Sprintf("env[%d]", i), kv, maxProfileWord); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		field, value string
		max          int
	}{
		{"configName", p.ConfigName, maxProfileShort},
		{"mcpPath", p.MCPPath, maxProfileWord},
		{"ready.url", p.Ready.URL, maxProfileWord},
		{"toolNames", p.ToolNames, maxProfileShort},
	} {
		if err := p.checkString(f.field, f.value, f.max); err != nil {
			return err
		}
	}
	if strings.ContainsFunc(p.MCPPath, unicode.IsSpace) {
		return p.errf("mcpPath", "%q holds a space: want a URL path such as /mcp", p.MCPPath)
	}
	for _, a := range []struct {
		field string
		api   *ProfileStateAPI
	}{{"healthAPI.path", p.HealthAPI}, {"sessionAPI.path", p.SessionAPI}} {
		if a.api != nil {
			if err := p.checkString(a.field, a.api.Path, maxProfileWord); err != nil {
				return err
			}
		}
	}
	if t := p.Ready.Timeout; t != 0 && (t < minReadyTimeout || t > maxReadyTimeout) {
		return p.errf("ready.timeout", "%s: want %s to %s", t, minReadyTimeout, maxReadyTimeout)
	}
	for ours, theirs := range p.Metrics {
		if err := p.checkString("metrics."+ours, theirs, maxProfileShort); err != nil {
			return err
		}
		if !isMetricName(ours) {
			return p.errf("metrics."+ours, "%q is none of our metric names (%s)", ours, strings.Join(metricNames, ", "))
		}
	}
	return nil
}

// checkString refuses a string field over max bytes, not UTF-8 or holding
// a control character.
func (p *Profile) checkString(field, s string, max int) error {
	switch {
	case len(s) > max:
		return p.errf(field, "%d bytes: want at most %d", len(s), max)
	case !utf8.ValidString(s):
		return p.errf(field, "%q is not valid UTF-8", s)
	}
	if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
		return p.errf(field, "%q holds a control character at byte %d (a newline, an escape, a NUL, ...)", s, i)
	}
	return nil
}

// isMetricName reports whether name is one of metricNames or a series of
// one (_count, _sum, _bucket).
func isMetricName(name string) bool {
	for _, m := range metricNames {
		if name == m || slices.Contains([]string{m + "_count", m + "_sum", m + "_bucket"}, name) {
			return true
		}
	}
	return false
}
