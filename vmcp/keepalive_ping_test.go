package vmcp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

const modernBetaScript = `name: beta
protocol: modern
tools:
  - {name: ok, description: Always fine, result: {text: fine}}
`

// TestKeepalivePingOnStatelessConnectionFails: mcp-go's Ping succeeds
// without sending anything on a stateless (2026-07-28) connection. A
// keepalive ping on an auto backend that only speaks that revision must
// therefore fail, and disable itself, rather than report a backend alive
// that it never reached; and protocol: modern with keepalive ping is
// refused when the gateway is built.
func TestKeepalivePingOnStatelessConnectionFails(t *testing.T) {
	t.Parallel()
	beta := startFake(t, modernBetaScript)
	cfg, err := vmcp.ParseConfig([]byte(backendsYAML(map[string]string{"beta": "    protocol: modern\n    keepalive: {method: ping, interval: 1h}\n"}, beta)), t.Name()+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vmcp.New(cfg); err == nil || !strings.Contains(err.Error(), `backend "beta"`) || !strings.Contains(err.Error(), "keepalive.method: ping") {
		t.Fatalf("keepalive ping on a modern backend: %v", err)
	}

	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: ping, interval: 100ms, jitter: 10ms, timeout: 100ms, maxFailures: 2, probeAfter: 1h}\n",
	}, beta)+"timeouts: {call: 2s}\n")
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "beta_ok", nil); res.IsError {
		t.Fatalf("beta (modern-only, reached by fallback) in a legacy session: %s", resultText(res))
	}
	testwait.For(t, 10*time.Second, "keepalive ping to fail twice and disable itself", func() bool {
		k := healthOf(t, g).Backends["beta"].Keepalive
		return !k.Enabled && k.ConsecutiveFailures == 2
	})

	st, _ := g.Session(c.GetSessionId())
	ms, _ := st.BackendState("beta")
	if !strings.Contains(ms.LastError, "ping") || !strings.Contains(ms.LastError, "tool:<name>") {
		t.Errorf("beta's lastError = %q, want it to say ping is a no-op and to use tool:<name>", ms.LastError)
	}
	for _, r := range beta.Requests() {
		if r.Method == "ping" {
			t.Errorf("a ping reached the stateless backend: %+v", r)
		}
	}
}
