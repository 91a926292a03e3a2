package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseFullExample(t *testing.T) {
	src := `name: demo
backends:
  - {name: alpha, url: "http://127.0.0.1:9101/mcp", transport: streamable-http}
  - {name: beta,  url: "http://127.0.0.1:9102/mcp", transport: sse}
  - {name: gamma, command: ["chaos", "backend", "--stdio", "--script", "g.yaml"], transport: stdio}
aggregation:
  conflictResolution: prefix
  prefixFormat: "{backend}_"
  priorityOrder: [alpha, beta]
timeouts: {initialize: 5s, call: 30s, list: 10s}
incomingAuth: {type: bearer, tokenEnv: VMCP_TOKEN}
limits: {maxResponseBytes: 4MiB}
`
	cfg, err := ParseWithEnv([]byte(src), "demo.yaml", env(map[string]string{"VMCP_TOKEN": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != "demo" || len(cfg.Backends) != 3 || cfg.Backends[2].Transport != TransportStdio || cfg.Backends[2].Command[0] != "chaos" {
		t.Errorf("cfg = %+v", cfg)
	}
	if cfg.Timeouts.Call != 30*time.Second || cfg.Timeouts.Close != DefaultClose || cfg.Limits.MaxResponseBytes != 4<<20 {
		t.Errorf("timeouts/limits = %+v %+v", cfg.Timeouts, cfg.Limits)
	}
	if cfg.IncomingAuth.Token != "s3cret" || cfg.Backends[0].Protocol != ProtocolAuto || cfg.Backends[1].Line != 4 {
		t.Errorf("auth/protocol/line = %+v %+v", cfg.IncomingAuth, cfg.Backends[1])
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := ParseWithEnv([]byte("backends: [{name: a, url: 'http://x/mcp'}]"), "", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Name != DefaultName || cfg.Aggregation.ConflictResolution != ConflictPrefix || cfg.Aggregation.PrefixFormat != DefaultPrefixFormat ||
		cfg.Timeouts.Initialize != DefaultInitialize || cfg.IncomingAuth.Type != AuthAnonymous || cfg.Pool.Size != DefaultPoolSize ||
		cfg.Backends[0].Transport != TransportStreamableHTTP {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown key", "backends:\n  - name: a\n    url: http://x/mcp\n    colour: red\n", `f.yaml:4: backends[0].colour: unknown field "colour"`},
		{"unknown top key", "backend: []\n", `f.yaml:1: backend: unknown field "backend"`},
		{"duplicate name", "backends:\n  - {name: a, url: 'http://x/mcp'}\n  - {name: a, url: 'http://y/mcp'}\n", `f.yaml:3: backends[1].name: duplicate backend name "a" (first defined on line 2)`},
		{"bad url", "backends:\n  - {name: a, url: 'ftp://x/mcp'}\n", `f.yaml:2: backends[0].url: invalid URL "ftp://x/mcp": scheme must be http or https`},
		{"no host", "backends:\n  - {name: a, url: 'http:///mcp'}\n", `backends[0].url: invalid URL "http:///mcp": host is missing`},
		{"missing url", "backends:\n  - {name: a}\n", `f.yaml:2: backends[0].url: is required for transport streamable-http`},
		{"stdio without command", "backends:\n  - {name: a, transport: stdio}\n", `backends[0].command: is required for transport stdio`},
		{"stdio with url", "backends:\n  - {name: a, transport: stdio, command: [x], url: 'http://x'}\n", `backends[0].url: stdio backends take a command, not a url`},
		{"bad transport", "backends:\n  - {name: a, url: 'http://x', transport: websocket}\n", `f.yaml:2: backends[0].transport: unknown transport "websocket": use streamable-http, sse or stdio`},
		{"zero timeout", "backends: [{name: a, url: 'http://x'}]\ntimeouts: {call: 0s}\n", `f.yaml:2: timeouts.call: must be positive, got 0s`},
		{"negative timeout", "backends: [{name: a, url: 'http://x'}]\ntimeouts: {call: -1s}\n", `timeouts.call: negative duration "-1s"`},
		{"bad duration", "backends: [{name: a, url: 'http://x'}]\ntimeouts: {call: 30}\n", `timeouts.call: want a duration such as "250ms", "1.5s" or "2m": a number needs a unit, got 30`},
		{"bad strategy", "backends: [{name: a, url: 'http://x'}]\naggregation: {conflictResolution: manual}\n", `f.yaml:2: aggregation.conflictResolution: unknown strategy "manual": use prefix or priority`},
		{"bad prefix", "backends: [{name: a, url: 'http://x'}]\naggregation: {prefixFormat: 'x_'}\n", `aggregation.prefixFormat: "x_" must contain {backend}`},
		{"unknown priority", "backends: [{name: a, url: 'http://x'}]\naggregation: {priorityOrder: [b]}\n", `aggregation.priorityOrder[0]: "b" is not a configured backend`},
		{"bad auth", "backends: [{name: a, url: 'http://x'}]\nincomingAuth: {type: oauth}\n", `incomingAuth.type: unknown type "oauth": use anonymous or bearer`},
		{"bearer no env", "backends: [{name: a, url: 'http://x'}]\nincomingAuth: {type: bearer, tokenEnv: NOPE}\n", `incomingAuth.tokenEnv: environment variable NOPE is not set or empty`},
		{"no backends", "name: x\n", `backends: at least one backend is required`},
		{"duplicate key", "backends: [{name: a, url: 'http://x'}]\nname: x\nname: y\n", `f.yaml:3: name: duplicate key (first at line 2)`},
		{"wrong type", "backends: {name: a}\n", `f.yaml:1: backends: want a list, got a mapping`},
		{"syntax", "backends: [\n", `f.yaml:`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWithEnv([]byte(tc.src), "f.yaml", env(nil))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q\n  does not contain %q", err, tc.want)
			}
		})
	}
}
