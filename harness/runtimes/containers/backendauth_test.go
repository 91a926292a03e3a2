package containers

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// TestBackendMCPRequiresToken: behind chaos vmcp in the run's image, a
// backend container's MCP listener refuses a request without the run's
// token, or with a wrong one (401), while the gateway, given the token as
// each backend's Authorization header, reaches both backends (streamable
// HTTP and SSE).
func TestBackendMCPRequiresToken(t *testing.T) {
	t.Parallel()
	e := engineT(t)
	env := startEnv(t, NewTopology(), 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := env.Client(ctx, history.RevisionLegacy, history.WithCallTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"alpha_echo", "beta_echo"} {
		if call := c.CallTool(ctx, tool, nil); call.Outcome != history.OutcomeOK {
			t.Fatalf("%s through the gateway: %s after %s: %s", tool, call.Outcome, call.Took(), call.Text())
		}
	}
	hc := &http.Client{Timeout: 10 * time.Second}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for _, name := range []string{"alpha", "beta"} {
		url := env.Backend(name).(*Backend).HostURL()
		for _, tc := range []struct {
			auth    string
			refused bool
		}{{"", true}, {"Bearer wrong", true}, {"Bearer " + e.mcpToken, false}} {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(initialize))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", name, url, err)
			}
			_ = resp.Body.Close()
			if got := resp.StatusCode == http.StatusUnauthorized; got != tc.refused {
				t.Errorf("%s, Authorization %q: HTTP %d, want refused (401) %v", name, redact(tc.auth, e.mcpToken), resp.StatusCode, tc.refused)
			}
		}
	}
}

// redact hides the run's token in a test message.
func redact(s, token string) string { return strings.ReplaceAll(s, token, "<token>") }

// TestWithBackendToken: the token goes to the container backends of the
// chaos vmcp config only (not to a backend elsewhere, not to a stdio
// backend), replaces an Authorization header already there, keeps the
// other headers, and the config still parses.
func TestWithBackendToken(t *testing.T) {
	t.Parallel()
	const cfg = `name: gw
backends:
  - name: beta
    transport: "streamable-http"
    url: "http://beta:8080/mcp"
  - name: gamma
    transport: sse
    url: "http://gamma:8080/sse"
    headers: {X-Trace: "1", Authorization: "Bearer old"}
  - name: elsewhere
    transport: "streamable-http"
    url: "http://127.0.0.1:9/mcp"
  - name: local
    transport: stdio
    command: [echo]
incomingAuth: {type: anonymous, allowNetwork: true}
`
	topo := &Topology{backendAuth: true, ctrs: []*ctr{{alias: "beta"}, {alias: "gamma"}}}
	out, err := topo.withBackendToken(cfg, "tok")
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := config.Parse([]byte(out), "config.yaml")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := map[string]map[string]string{
		"beta":      {"Authorization": "Bearer tok"},
		"gamma":     {"X-Trace": "1", "Authorization": "Bearer tok"},
		"elsewhere": nil, "local": nil,
	}
	for _, b := range parsed.Backends {
		if len(b.Headers) != len(want[b.Name]) {
			t.Errorf("%s: headers %v, want %v", b.Name, b.Headers, want[b.Name])
		}
		for k, v := range want[b.Name] {
			if b.Headers[k] != v {
				t.Errorf("%s: header %s = %q, want %q", b.Name, k, b.Headers[k], v)
			}
		}
	}
	topo.backendAuth = false
	if same, _ := topo.withBackendToken(cfg, "tok"); same != cfg {
		t.Errorf("a topology without backend tokens changed the config:\n%s", same)
	}
}
