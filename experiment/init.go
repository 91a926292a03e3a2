package experiment

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// InitOptions configure Starter.
type InitOptions struct {
	// Gateway is the gateway's MCP URL.
	Gateway string
	// AuthEnv names the environment variable of the gateway's bearer
	// token, if it needs one.
	AuthEnv string
	// Controls maps backend names to the control URLs of their proxies.
	Controls map[string]string
	// Protocol is the client revision (legacy or modern; default legacy).
	Protocol string
	// Timeout bounds the connection and tools/list (default 10 s).
	Timeout time.Duration
}

// Starter writes a starter experiment from a live gateway's tools/list:
// the tools grouped by backend (origin markers, else the prefix before the
// first "_"), a hypothesis (the first backend's tool is listed and answers
// in time) and, when that backend has a control URL, a method that makes
// it fail and checks the error names it. The result parses with Parse.
func Starter(ctx context.Context, o InitOptions) (string, error) {
	o.Timeout = cmp.Or(o.Timeout, 10*time.Second)
	var headers map[string]string
	if o.AuthEnv != "" {
		tok := os.Getenv(o.AuthEnv)
		if tok == "" {
			return "", fmt.Errorf("environment variable %s is not set", o.AuthEnv)
		}
		headers = map[string]string{"Authorization": "Bearer " + tok}
	}
	dctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c, err := harness.Dial(dctx, o.Gateway, revisionOf(o.Protocol), nil, harness.WithCallTimeout(o.Timeout), harness.WithHeaders(headers))
	if err != nil {
		return "", fmt.Errorf("gateway %s: %w", o.Gateway, err)
	}
	defer closeClient(c)
	call := c.ListTools(dctx)
	if call.Err != nil {
		return "", fmt.Errorf("gateway %s: tools/list: %w", o.Gateway, call.Err)
	}
	byBackend := map[string][]string{}
	for _, t := range call.Tools.Tools {
		backend, _, ok := harness.ParseOrigin(t.Description, harness.MetaFields(t.Meta))
		if !ok {
			backend = guessBackend(t.Name, o.Controls)
		}
		byBackend[backend] = append(byBackend[backend], t.Name)
	}
	if len(byBackend) == 0 {
		return "", fmt.Errorf("gateway %s lists no tools: nothing to start from", o.Gateway)
	}
	names := slices.Sorted(maps.Keys(byBackend))
	for name := range o.Controls {
		if !slices.Contains(names, name) {
			return "", fmt.Errorf("--control %s: no tool of the gateway seems to come from backend %q (backends seen: %s)", name, name, strings.Join(names, ", "))
		}
	}
	target := names[0]
	for _, n := range names {
		if o.Controls[n] != "" {
			target = n
			break
		}
	}
	return render(o, names, byBackend, target), nil
}

// guessBackend names a tool's backend when it carries no origin marker: a
// backend given a control URL whose name prefixes the tool, else the part
// before the first "_" (the common {backend}_ prefix), else "unknown".
func guessBackend(tool string, controls map[string]string) string {
	for name := range controls {
		if strings.HasPrefix(tool, name+"_") || strings.HasPrefix(tool, name+".") {
			return name
		}
	}
	if i := strings.IndexAny(tool, "_."); i > 0 {
		return tool[:i]
	}
	return "unknown"
}

func render(o InitOptions, names []string, byBackend map[string][]string, target string) string {
	q := strconv.Quote
	var b strings.Builder
	tool := byBackend[target][0]
	fmt.Fprintf(&b, "# Starter experiment written by `chaos experiment init` from %s\n", o.Gateway)
	fmt.Fprintf(&b, "# (%s). Run it with: chaos experiment run FILE [--dry-run]\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "title: an error on ${tool} names ${backend}, and the deployment recovers\n")
	fmt.Fprintf(&b, "parameters:\n  backend: %s\n  tool: %s\n", q(target), q(tool))
	fmt.Fprintf(&b, "deployment:\n  gateway: %s\n", q(o.Gateway))
	if o.AuthEnv != "" {
		fmt.Fprintf(&b, "  authEnv: %s   # the bearer token is read from this variable, never from the file\n", o.AuthEnv)
	}
	if o.Protocol == "modern" {
		b.WriteString("  protocol: modern\n")
	}
	b.WriteString("  # health: {url: \"http://GATEWAY/api/backends/health\"}   # optional: enables health probes\n")
	b.WriteString("  backends:   # the control URL of the chaos proxy in front of each backend\n")
	any := false
	for _, n := range names {
		tools := strings.Join(byBackend[n], ", ")
		if c := o.Controls[n]; c != "" {
			fmt.Fprintf(&b, "    - {name: %s, control: %s}   # tools: %s\n", q(n), q(c), clip(tools, 120))
			any = true
		} else {
			fmt.Fprintf(&b, "    # - {name: %s, control: \"http://PROXY-ADMIN:PORT\"}   # tools: %s\n", q(n), clip(tools, 120))
		}
	}
	if !any {
		b.WriteString("    []\n")
	}
	b.WriteString("  # allowHosts: []   # non-loopback hosts this experiment may contact\n")
	b.WriteString("safeguards: {maxDuration: 5m, leaseTTL: 30s, callTimeout: 10s}\n")
	b.WriteString("steadyState:\n  title: ${tool} is listed and answers within 5s\n  probes:\n")
	b.WriteString("    - {name: tool listed, type: tools_listed, tools: [\"${tool}\"]}\n")
	b.WriteString("    - name: tool answers in time\n      type: call_tool\n      tool: ${tool}\n      arguments: {}   # fill in the tool's arguments\n")
	b.WriteString("      expect: {outcome: any, within: 5s}\n      tolerance: {eventually: 20s}\n")
	if !any {
		b.WriteString("# method: give a backend a control URL above, then inject faults on it, e.g.\n")
		b.WriteString("#   - action: {type: inject, backend: \"${backend}\", faults: [{kind: http_status, status: 503, match: {method: tools/call}}]}\n")
		b.WriteString("#   - probe: {name: the error names the backend, type: call_tool, tool: \"${tool}\", expect: {names: \"${backend}\", within: 5s}}\n")
		b.WriteString("#   - action: {type: clear, backend: \"${backend}\"}\n")
		return b.String()
	}
	b.WriteString("method:\n")
	b.WriteString("  - action:\n      type: inject\n      backend: ${backend}\n")
	b.WriteString("      faults: [{kind: http_status, status: 503, match: {method: tools/call}}]\n")
	b.WriteString("  - probe:\n      name: the error names the backend\n      type: call_tool\n      tool: ${tool}\n")
	b.WriteString("      arguments: {}\n      expect: {names: \"${backend}\", within: 5s}\n")
	b.WriteString("  - action: {type: clear, backend: \"${backend}\"}\n")
	b.WriteString("  - pause: 1s\n")
	return b.String()
}
