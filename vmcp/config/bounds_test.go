package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBoundsRefused: well-formed but absurd values are refused at load time
// with file:line: field and the allowed range.
func TestBoundsRefused(t *testing.T) {
	const be = "backends:\n  - {name: a, url: 'http://x/mcp'}\n"
	cases := []struct{ name, src, want string }{
		{"sessionIdle 1ns", be + "timeouts: {sessionIdle: 1ns}\n", `f.yaml:3: timeouts.sessionIdle: 1ns is out of range: allowed 100ms to 24h0m0s`},
		{"sessionIdle two days", be + "timeouts: {sessionIdle: 48h}\n", `f.yaml:3: timeouts.sessionIdle: 48h0m0s is out of range: allowed 100ms to 24h0m0s`},
		{"health 1ns", be + "health: {interval: 1ns, timeout: 1ns}\n", `f.yaml:3: health.interval: 1ns is out of range: allowed 10ms to 24h0m0s`},
		{"keepalive 1ns", "backends:\n  - name: a\n    url: 'http://x/mcp'\n    keepalive: {method: ping, interval: 1ns, timeout: 1ns}\n",
			`f.yaml:4: backends[0].keepalive.interval: 1ns is out of range: allowed 10ms to 24h0m0s`},
		{"port 99999", "backends:\n  - {name: a, url: 'http://127.0.0.1:99999/mcp'}\n", `f.yaml:2: backends[0].url: invalid URL "http://127.0.0.1:99999/mcp": port 99999 is out of range: allowed 1 to 65535`},
		{"port 0", "backends:\n  - {name: a, url: 'http://127.0.0.1:0/mcp'}\n", `port 0 is out of range`},
		{"header name", "backends:\n  - name: a\n    url: 'http://x/mcp'\n    headers: {'X Bad:': v}\n", `f.yaml:4: backends[0].headers: "X Bad:" is not a valid HTTP header name`},
		{"header value", "backends:\n  - name: a\n    url: 'http://x/mcp'\n    headers: {X-Ok: \"a\\nb\"}\n", `f.yaml:4: backends[0].headers.X-Ok: the value is not a valid HTTP header value`},
		{"tools limit", be + "limits: {maxToolsPerBackend: 1000000}\n", `f.yaml:3: limits.maxToolsPerBackend: 1000000 is out of range: allowed 1 to 100000`},
		{"sessions limit", be + "limits: {maxSessions: 0}\n", `f.yaml:3: limits.maxSessions: must be at least 1`},
		{"sessions limit high", be + "limits: {maxSessions: 200000}\n", `limits.maxSessions: 200000 is out of range: allowed 1 to 100000`},
		{"response bytes 900GiB", be + "limits: {maxResponseBytes: 900GiB}\n", `f.yaml:3: limits.maxResponseBytes: 966367641600 is out of range: allowed 1 to 1073741824 (1GiB)`},
		{"pool size 1e9", be + "pool: {size: 1000000000}\n", `f.yaml:3: pool.size: 1000000000 is out of range: allowed 1 to 10000`},
		{"allowNetwork with bearer", be + "incomingAuth: {type: bearer, tokenEnv: T, allowNetwork: true}\n", `f.yaml:3: incomingAuth.allowNetwork: only anonymous auth takes allowNetwork`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWithEnv([]byte(tc.src), "f.yaml", env(map[string]string{"T": "tok"}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestBoundsAccepted: the edges of each range, and the defaults.
func TestBoundsAccepted(t *testing.T) {
	src := "backends:\n  - name: a\n    url: 'http://127.0.0.1:65535/mcp'\n    headers: {X-Team: a}\n" +
		"    keepalive: {method: ping, interval: 10ms, timeout: 10ms, jitter: 1ms}\n" +
		"timeouts: {sessionIdle: 100ms}\nhealth: {interval: 10ms, timeout: 5ms}\n" +
		"incomingAuth: {type: anonymous, allowNetwork: true}\nlimits: {maxToolsPerBackend: 100000, maxSessions: 1, maxResponseBytes: 1GiB}\npool: {size: 10000}\n"
	cfg, err := ParseWithEnv([]byte(src), "f.yaml", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.IncomingAuth.AllowNetwork || cfg.Limits.MaxToolsPerBackend != 100000 || cfg.Limits.MaxSessions != 1 || cfg.Timeouts.SessionIdle != 100*time.Millisecond {
		t.Errorf("cfg = %+v %+v %+v", cfg.IncomingAuth, cfg.Limits, cfg.Timeouts)
	}
	def, err := ParseWithEnv([]byte("backends: [{name: a, url: 'http://x/mcp'}]"), "", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if def.Limits.MaxToolsPerBackend != DefaultMaxToolsPerBackend || def.Limits.MaxSessions != DefaultMaxSessions ||
		def.Timeouts.SessionIdle != 10*time.Minute || def.IncomingAuth.AllowNetwork {
		t.Errorf("defaults = %+v %+v", def.Limits, def.Timeouts)
	}
}

// TestTokenFile: the bearer token can come from a file (relative to the
// configuration file), so no secret needs to be a flag or in the
// configuration itself.
func TestTokenFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tok"), []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const be = "backends: [{name: a, url: 'http://x/mcp'}]\n"
	cfg, err := ParseWithEnv([]byte(be+"incomingAuth: {type: bearer, tokenFile: tok}\n"), filepath.Join(dir, "gw.yaml"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.IncomingAuth.Token != "s3cret" {
		t.Fatalf("token = %q", cfg.IncomingAuth.Token)
	}
	for _, tc := range []struct{ src, want string }{
		{"incomingAuth: {type: bearer, tokenFile: empty}\n", "incomingAuth.tokenFile: " + filepath.Join(dir, "empty") + " is empty"},
		{"incomingAuth: {type: bearer, tokenFile: nope}\n", "incomingAuth.tokenFile: " + filepath.Join(dir, "nope") + ": cannot read token file: no such file"},
		{"incomingAuth: {type: bearer, tokenFile: /dev/zero}\n", "incomingAuth.tokenFile: /dev/zero: token file: not a regular file (a character device)"},
		{"incomingAuth: {type: bearer, tokenFile: tok, tokenEnv: T}\n", "incomingAuth: give tokenEnv or tokenFile, not both"},
		{"incomingAuth: {type: anonymous, tokenFile: tok}\n", "incomingAuth: only bearer auth takes a token"},
	} {
		if _, err := ParseWithEnv([]byte(be+tc.src), filepath.Join(dir, "gw.yaml"), env(map[string]string{"T": "x"})); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", strings.TrimSpace(tc.src), err, tc.want)
		}
	}
}
