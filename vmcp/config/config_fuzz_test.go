package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// configSeeds are the seed corpus of FuzzParse (they run with every plain
// go test); testdata/fuzz/FuzzParse holds inputs the fuzzer found.
var configSeeds = []string{
	`name: demo
backends:
  - {name: alpha, url: "http://127.0.0.1:9101/mcp", transport: streamable-http}
  - {name: beta,  url: "http://127.0.0.1:9102/mcp", transport: sse, headers: {X-A: b}}
  - {name: gamma, command: ["chaos", "backend", "--stdio"], transport: stdio, env: {A: b}}
aggregation: {conflictResolution: prefix, prefixFormat: "{backend}_", priorityOrder: [alpha, beta]}
timeouts: {initialize: 5s, call: 30s, list: 10s, close: 1s, sessionIdle: 30m}
incomingAuth: {type: bearer, tokenEnv: VMCP_TOKEN}
limits: {maxResponseBytes: 4MiB}
pool: {size: 2}
health: {interval: 30s, timeout: 10s, unhealthyThreshold: 3, degradedThreshold: 5s}
breaker: {failureThreshold: 5, openTimeout: 30s}
optimizer: {enabled: true, maxResults: 8}
notifications: {listChanged: true}
`,
	"backends: [{name: a, url: 'http://x/mcp'}]",
	"backends:\n  - name: a\n    url: http://x/mcp\n    probe: \"tool:health\"\n    keepalive: {method: ping, interval: 1s, timeout: 500ms}\n",
	"backends:\n  - &a {name: a, url: 'http://x/mcp'}\n  - *a\n",
	"backends: [{name: a, url: 'http://x/mcp'}]\nlimits: {maxResponseBytes: 8589934592GiB}\n",
	"backends: [{name: a, url: 'http://x/mcp'}]\nhealth: {interval: 1ns}\n",
	"backends: [{name: a, url: 'http://x/mcp'}]\naggregation: {conflictResolutionConfig: {prefixFormat: '{backend}.'}}\n",
	"backends: {}\n",
	"- 1\n",
	"backends: [{name: a, url: 'http://[::1/mcp'}]\n",
	"backends: [{name: \"\\0\", url: 'http://x/mcp'}]\n",
	"a: &a [*a]\n",
}

// FuzzParse: no input makes the configuration decoder panic; every error
// is a *Error naming the file, never an internal (recovered) error, and
// its line is within the input; what parses is valid by the decoder's own
// rules (checked on the result) and parses the same way twice.
func FuzzParse(f *testing.F) {
	for _, s := range configSeeds {
		f.Add([]byte(s))
	}
	noEnv := func(k string) (string, bool) {
		if k == "VMCP_TOKEN" {
			return "t", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseWithEnv(data, "fuzz.yaml", noEnv)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not a *config.Error: %v", err, err)
			}
			if e.File != "fuzz.yaml" || strings.Contains(e.Msg, "internal error") {
				t.Fatalf("bad error: %v", err)
			}
			lines := strictyaml.Lines(data)
			if e.Line > lines {
				t.Fatalf("error on line %d of a %d-line input: %v", e.Line, lines, err)
			}
			return
		}
		if len(cfg.Backends) == 0 {
			t.Fatalf("a configuration without backends parsed: %+v", cfg)
		}
		names := map[string]bool{}
		for _, b := range cfg.Backends {
			if b.Name == "" || names[b.Name] {
				t.Fatalf("backend name %q empty or duplicate", b.Name)
			}
			names[b.Name] = true
		}
		tm := cfg.Timeouts
		if tm.Initialize <= 0 || tm.Call <= 0 || tm.List <= 0 || tm.Close <= 0 || cfg.Limits.MaxResponseBytes <= 0 || cfg.Pool.Size <= 0 {
			t.Fatalf("a non-positive timeout or limit parsed: %+v %+v pool %d", tm, cfg.Limits, cfg.Pool.Size)
		}
		if cfg.Health.Interval <= 0 || cfg.Health.Timeout <= 0 || cfg.Health.Timeout >= cfg.Health.Interval {
			t.Fatalf("health interval %v, timeout %v", cfg.Health.Interval, cfg.Health.Timeout)
		}
		again, err := ParseWithEnv(data, "fuzz.yaml", noEnv)
		if err != nil || !reflect.DeepEqual(cfg, again) {
			t.Fatalf("the same input parsed differently the second time: %v", err)
		}
	})
}
