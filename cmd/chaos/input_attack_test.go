package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestInputAttacks: every input found accepted silently, crashing the
// process or exiting with the wrong status (issue 42) is a usage error
// (exit 2) that names what is wrong, before anything starts: oversized
// and special input files, blank tokens, unbounded leases, outputs that
// would replace an input, a symbolic link, a FIFO or a device, flags
// that were ignored, and profile strings and durations out of bounds.
func TestInputAttacks(t *testing.T) {
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sparse := func(name string, size int64) string { // big, yet no disk used
		p := file(name, "")
		if err := os.Truncate(p, size); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.html")
	if err := os.Symlink(filepath.Join(dir, "elsewhere.html"), link); err != nil {
		t.Fatal(err)
	}
	script := file("s.yaml", "name: b\ntools: [{name: echo}]\n")
	results := file("r.json", "{}")
	cfg := file("gw.yaml", "backends:\n  - {name: b, url: 'http://127.0.0.1:1/mcp'}\n")
	aFile := file("afile", "x")
	exp := file("e.yaml", "x: y\n")
	badTmpl := file("bad.tmpl", "backends: {{ .Nope \n")
	profile := func(name, extra string) string {
		return file(name, "name: g\ncommand: [chaos, vmcp, --config, \"{{.ConfigPath}}\", --listen, \"{{.Listen}}\"]\n"+extra)
	}
	zeroTmpl := profile("zero-tmpl.yaml", "configTemplate: /dev/zero\n")
	var steps []string
	for i := 1; i <= 1000; i++ {
		steps = append(steps, strconv.Itoa(i))
	}
	const unset = "CHAOS_TEST_SURELY_UNSET_42"
	_ = os.Unsetenv(unset)

	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		// Bounded reads: a device, a FIFO or an oversized file is never read.
		{"backend --script /dev/zero", nil, []string{"backend", "--script", "/dev/zero"}, "/dev/zero: backend script: not a regular file (a character device)"},
		{"backend --script a FIFO", nil, []string{"backend", "--script", fifo}, "backend script: not a regular file (a FIFO)"},
		{"backend --script over 4 MiB", nil, []string{"backend", "--script", sparse("big.yaml", 4<<20+1)}, "backend script larger than 4 MiB"},
		{"vmcp --config /dev/zero", nil, []string{"vmcp", "--config", "/dev/zero"}, "/dev/zero: gateway config: not a regular file"},
		{"report /dev/zero", nil, []string{"report", "/dev/zero", "-o", filepath.Join(dir, "z.html")}, "/dev/zero: results document: not a regular file"},
		{"report over 256 MiB", nil, []string{"report", sparse("big.json", 256<<20+1), "-o", filepath.Join(dir, "b.html")}, "results document larger than 256 MiB"},
		{"run --profile /dev/zero", nil, []string{"run", "--profile", "/dev/zero", "--list"}, "/dev/zero: target profile: not a regular file"},
		{"a profile whose configTemplate is /dev/zero", nil, []string{"run", "--profile", zeroTmpl, "--list"}, "configTemplate: /dev/zero: config template: not a regular file"},
		{"run --config-template /dev/zero", nil, []string{"run", "--target", "exec", "--config-template", "/dev/zero", "--list"}, "config template: not a regular file"},
		{"experiment validate /dev/zero", nil, []string{"experiment", "validate", "/dev/zero"}, "/dev/zero: experiment: not a regular file"},
		{"backend --token-file /dev/zero", nil, []string{"backend", "--script", script, "--token-file", "/dev/zero"}, "token file: not a regular file"},

		// Tokens of spaces.
		{"backend --token of spaces", nil, []string{"backend", "--script", script, "--listen", "0.0.0.0:0", "--token", "   "}, "--token is empty or blank"},
		{"backend --admin-token of a space", nil, []string{"backend", "--script", script, "--admin", "0.0.0.0:0", "--admin-token", " "}, "--admin-token is empty or blank"},
		{"CHAOS_ADMIN_TOKEN of a space", []string{"CHAOS_ADMIN_TOKEN= "}, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--admin", "0.0.0.0:0"}, "$CHAOS_ADMIN_TOKEN is empty or blank"},
		{"a token with a newline", nil, []string{"backend", "--script", script, "--token", "ab\ncd"}, "--token holds a control character at byte 2"},

		// Leases and upstreams.
		{"backend --lease-ttl 1ns", nil, []string{"backend", "--script", script, "--lease-ttl", "1ns"}, "--lease-ttl 1ns: want 1s to 24h0m0s"},
		{"backend --max-lease-ttl 1000000h", nil, []string{"backend", "--script", script, "--max-lease-ttl", "1000000h"}, "--max-lease-ttl 1000000h0m0s: want 1s to 24h0m0s"},
		{"proxy --lease-ttl 1ns", nil, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--lease-ttl", "1ns"}, "--lease-ttl 1ns: want 1s to 24h0m0s"},
		{"proxy --max-lease-ttl 1000000h", nil, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--max-lease-ttl", "1000000h"}, "--max-lease-ttl 1000000h0m0s: want 1s"},
		{"proxy --upstream port 0", nil, []string{"proxy", "--upstream", "http://127.0.0.1:0/mcp"}, "port 0: want 1 to 65535"},
		{"proxy --upstream port 99999", nil, []string{"proxy", "--upstream", "http://127.0.0.1:99999/mcp"}, "port 99999: want 1 to 65535"},
		{"proxy --listen nonsense", nil, []string{"proxy", "--upstream", "http://127.0.0.1:1/mcp", "--listen", "nonsense"}, `--listen "nonsense": want HOST:PORT`},

		// Outputs: never an input, a directory, a link, a FIFO or a device.
		{"report -o its own input", nil, []string{"report", results, "-o", results}, "is the input " + results},
		{"report -o a symbolic link", nil, []string{"report", results, "-o", link}, "is a symbolic link, not a regular file"},
		{"report -o a FIFO", nil, []string{"report", results, "-o", fifo}, "is a FIFO, not a regular file"},
		{"report -o a device", nil, []string{"report", results, "-o", "/dev/null"}, "is a character device, not a regular file"},
		{"report -o ''", nil, []string{"report", results, "-o", ""}, `--out "": want a file name`},
		{"report -o .", nil, []string{"report", results, "-o", "."}, "is a directory, not a regular file"},
		{"run --out and --html the same", nil, []string{"run", "--out", filepath.Join(dir, "x.json"), "--html", filepath.Join(dir, "x.json"), "--list"}, "--out and --html both name"},
		{"run --out its own profile", nil, []string{"run", "--profile", zeroTmpl, "--out", zeroTmpl, "--list"}, "is the input"},
		{"bench --out under a regular file", nil, []string{"bench", "--out", filepath.Join(aFile, "b.json")}, aFile + " is not a directory"},
		{"experiment run --dry-run --journal under a file", nil, []string{"experiment", "run", "--dry-run", "--journal", filepath.Join(aFile, "j.json"), exp}, aFile + " is not a directory"},
		{"experiment run --journal its own experiment", nil, []string{"experiment", "run", "--journal", exp, exp}, "is the input"},
		{"vmcp --cpuprofile its own config", nil, []string{"vmcp", "--config", cfg, "--cpuprofile", cfg}, "is the input " + cfg},

		// Flags that were ignored or accepted out of bounds.
		{"run --gateway-image with the reference", nil, []string{"run", "--gateway-image", "x:y", "--list"}, "--gateway-image ($VMCP_CHAOS_GATEWAY_IMAGE) \"x:y\": the reference gateway runs in-process"},
		{"bench --revision ''", nil, []string{"bench", "--revision", ""}, "--revision: want legacy, modern or both"},
		{"bench --steps ''", nil, []string{"bench", "--steps", ""}, "--steps: want some of"},
		{"bench --scale-sessions with 1000 counts", nil, []string{"bench", "--scale-sessions", strings.Join(steps, ",")}, "1000 counts: want 1 to 8"},
		{"bench --scale-duration 10m over 4 counts", nil, []string{"bench", "--scale-sessions", "1,2,3,4", "--scale-duration", "10m"}, "of load: want at most 30m0s"},
		{"completion bogus", nil, []string{"completion", "bogus"}, `unknown command "bogus"`},

		// Usage errors that exited 1.
		{"vmcp --listen nonsense", nil, []string{"vmcp", "--config", cfg, "--listen", "nonsense"}, `--listen "nonsense": want HOST:PORT`},
		{"vmcp --listen 127.0.0.1:99999", nil, []string{"vmcp", "--config", cfg, "--listen", "127.0.0.1:99999"}, `port "99999": want 0 to 65535`},
		{"run --mcp-path no-slash", nil, []string{"run", "--target", "exec", "--mcp-path", "no-slash", "--list"}, `--mcp-path ($VMCP_CHAOS_MCP_PATH) "no-slash": want a URL path starting with /`},
		{"run --config-template not a template", nil, []string{"run", "--target", "exec", "--config-template", badTmpl, "--list"}, "--config-template ($VMCP_CHAOS_CONFIG_TEMPLATE): template: " + badTmpl},
		{"run --ready-url not a template", nil, []string{"run", "--target", "exec", "--ready-url", "{{", "--list"}, "--ready-url ($VMCP_CHAOS_READY_URL): template ready-url"},
		{"run --ready-url not a url", nil, []string{"run", "--target", "exec", "--ready-url", "not a url", "--list"}, `renders to "not a url": want an http or https URL`},
		{"profile check --timeout 1ns", nil, []string{"profile", "check", "--timeout", "1ns", zeroTmpl}, "--timeout 1ns: want 1s to 1h"},
		{"experiment init --protocol bogus", nil, []string{"experiment", "init", "--gateway", "http://127.0.0.1:1/mcp", "--protocol", "bogus", "--out", "-"}, `--protocol "bogus": want legacy or modern`},
		{"experiment init --auth-env unset", nil, []string{"experiment", "init", "--gateway", "http://127.0.0.1:1/mcp", "--auth-env", unset, "--out", "-"}, "--auth-env " + unset + ": the environment variable is not set or blank"},

		// Profiles: no control characters, bounded strings and durations.
		{"profile name of 100 kB", nil, []string{"run", "--profile", file("p1.yaml", "name: "+strings.Repeat("n", 100_000)+"\ncommand: [x]\n"), "--list"}, "name: 100000 bytes: want at most 256"},
		{"profile name with a newline and an ANSI escape", nil, []string{"run", "--profile", file("p2.yaml", "name: \"gw\\n\\e[31mred\"\ncommand: [x]\n"), "--list"}, "p2.yaml:1: name: \"gw\\n\\x1b[31mred\" holds a control character"},
		{"profile mcpPath with a space", nil, []string{"run", "--profile", profile("p3.yaml", "mcpPath: \"/m cp\"\n"), "--list"}, `mcpPath: "/m cp" holds a space`},
		{"profile mcpPath with a newline", nil, []string{"run", "--profile", profile("p4.yaml", "mcpPath: \"/mcp\\n\"\n"), "--list"}, "mcpPath: \"/mcp\\n\" holds a control character"},
		{"profile configName with a NUL", nil, []string{"run", "--profile", profile("p5.yaml", "configName: \"c\\0.yaml\"\n"), "--list"}, "configName: \"c\\x00.yaml\" holds a control character"},
		{"profile ready.timeout 1ns", nil, []string{"run", "--profile", profile("p6.yaml", "ready: {timeout: 1ns}\n"), "--list"}, "ready.timeout: 1ns: want 1s to 1h0m0s"},
		{"profile ready.timeout 700h", nil, []string{"run", "--profile", profile("p7.yaml", "ready: {timeout: 700h}\n"), "--list"}, "ready.timeout: 700h0m0s: want 1s to 1h0m0s"},
		{"profile toolNames with a newline", nil, []string{"run", "--profile", profile("p8.yaml", "toolNames: \"{backend}_{tool}\\n\"\n"), "--list"}, "toolNames: \"{backend}_{tool}\\n\" holds a control character"},
		{"profile unknown metrics name", nil, []string{"run", "--profile", profile("p9.yaml", "metrics: {vmcp_bogus_total: x_total}\n"), "--list"}, `metrics.vmcp_bogus_total: "vmcp_bogus_total" is none of our metric names`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runChaosEnv(t, tc.env, tc.args...)
			if code := exitCodeOf(err); code != exitUsage || !strings.Contains(string(out), tc.want) {
				t.Fatalf("chaos %q: exit %d, %s\nwant exit 2 saying %q", tc.args, code, out, tc.want)
			}
		})
	}
	// Nothing was written through the link, the FIFO was never opened for
	// writing, and the input survived.
	if _, err := os.Stat(filepath.Join(dir, "elsewhere.html")); err == nil {
		t.Error("report -o a symbolic link wrote through it")
	}
	if data, _ := os.ReadFile(results); string(data) != "{}" {
		t.Errorf("report -o its own input: the input is now %q", data)
	}
}
