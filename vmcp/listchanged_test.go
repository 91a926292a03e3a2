package vmcp_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// listeningClient is a legacy client with a GET stream, counting
// tools/list_changed notifications.
func listeningClient(t *testing.T, url string) (*client.Client, *atomic.Int32) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url, transport.WithContinuousListening(), transport.WithHTTPLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	var n atomic.Int32
	c.OnNotification(func(no mcp.JSONRPCNotification) {
		if no.Method == string(mcp.MethodNotificationToolsListChanged) {
			n.Add(1)
		}
	})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctxT(t, 10*time.Second), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return c, &n
}

func hasPrefix(names []string, p string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

const listChangedCfg = "timeouts: {call: 2s, initialize: 2s}\nhealth: {interval: 300ms, timeout: 250ms, unhealthyThreshold: 2}\nnotifications: {listChanged: true}\n"

// Serial: its health probes time out after 250 ms. Beside the parallel
// tests (-race, a second copy of the package running) starved probes kept
// beta from rejoining in time.
func TestListChangedWhenBackendLeavesAndRejoins(t *testing.T) {
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(nil, alpha, beta)+listChangedCfg)
	testwait.For(t, 5*time.Second, "beta healthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "healthy" })
	c, notes := listeningClient(t, g.URL())
	if !hasPrefix(toolNames(t, c), "beta_") {
		t.Fatal("beta missing at start")
	}
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "a list_changed notification", func() bool { return notes.Load() >= 1 })
	if names := toolNames(t, c); hasPrefix(names, "beta_") || !hasPrefix(names, "alpha_") {
		t.Fatalf("tools after beta left: %v", names)
	}
	beta.ClearFaults()
	testwait.For(t, 15*time.Second, "a second list_changed notification", func() bool { return notes.Load() >= 2 })
	if !hasPrefix(toolNames(t, c), "beta_") {
		t.Fatal("beta did not rejoin the live session")
	}
	if res, _ := callTool(t, c, "beta_ok", nil); res.IsError || resultText(res) != "fine" {
		t.Fatalf("beta after rejoining: %q", resultText(res))
	}
}

// Serial: its health probes time out after 250 ms, as in
// TestListChangedWhenBackendLeavesAndRejoins, which failed beside the
// parallel tests.
func TestListChangedLateJoinOfBackendDownAtSessionStart(t *testing.T) {
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, backendsYAML(nil, alpha, beta)+listChangedCfg)
	testwait.For(t, 5*time.Second, "beta unhealthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "unhealthy" })
	c, notes := listeningClient(t, g.URL())
	if hasPrefix(toolNames(t, c), "beta_") {
		t.Fatal("unhealthy beta in a new session")
	}
	beta.ClearFaults()
	// 15 s: under two -race suites beta's probes (250 ms) can time out
	// for a while after the clear (5 s once ran out).
	joined := func() bool { return notes.Load() >= 1 && hasPrefix(toolNames(t, c), "beta_") }
	for end := time.Now().Add(15 * time.Second); !joined(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			st, _ := g.Session(c.GetSessionId())
			ms, _ := st.BackendState("beta")
			t.Fatalf("beta did not join the live session within 15 s of the clear: %d list_changed notification(s), beta's health %q, in the session %+v",
				notes.Load(), healthOf(t, g).Backends["beta"].Status, ms)
		}
	}
	if res, _ := callTool(t, c, "beta_ok", nil); res.IsError || resultText(res) != "fine" {
		t.Fatalf("late-joined beta: %q", resultText(res))
	}
	st, _ := g.Session(c.GetSessionId())
	if ms, _ := st.BackendState("beta"); ms.State != "connected" {
		t.Fatalf("beta state in the session %+v", ms)
	}
}

// Serial: its health probes time out after 250 ms. Beside the parallel
// tests (-race, a second copy of the package running) beta never became
// healthy within 5 s.
func TestListChangedReindexesOptimizer(t *testing.T) {
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(nil, alpha, beta)+listChangedCfg+"optimizer: {enabled: true}\n")
	testwait.For(t, 5*time.Second, "beta healthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "healthy" })
	c, notes := listeningClient(t, g.URL())
	find := func() string {
		res, _ := callTool(t, c, "find_tool", map[string]any{"tool_description": "always fine", "tool_keywords": []string{"ok", "fine"}})
		return resultText(res)
	}
	if !strings.Contains(find(), "beta_ok") {
		t.Fatalf("find_tool before: %s", find())
	}
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "beta to leave", func() bool { return notes.Load() >= 1 })
	if out := find(); strings.Contains(out, "beta_") {
		t.Fatalf("find_tool returns beta's tools after beta left: %s", out)
	}
	beta.ClearFaults()
	testwait.For(t, 5*time.Second, "beta to rejoin", func() bool { return notes.Load() >= 2 })
	if out := find(); !strings.Contains(out, "beta_ok") {
		t.Fatalf("find_tool after beta rejoined: %s", out)
	}
}

// Serial: its health probes time out after 250 ms, as in
// TestListChangedWhenBackendLeavesAndRejoins, which failed beside the
// parallel tests.
func TestListChangedOffByDefault(t *testing.T) {
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	g := startGateway(t, backendsYAML(nil, alpha, beta)+"health: {interval: 300ms, timeout: 250ms, unhealthyThreshold: 2}\n")
	c, notes := listeningClient(t, g.URL())
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "beta unhealthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "unhealthy" })
	time.Sleep(100 * time.Millisecond)
	if notes.Load() != 0 || !hasPrefix(toolNames(t, c), "beta_") {
		t.Fatalf("without listChanged the live session changed: %d notifications", notes.Load())
	}
}

// TestListChangedUpdatesApplyInOrder flips a backend between unhealthy and
// degraded many times in a row (as fast as the health tracker allows) and
// checks that, once the updates settle, the live session shows the backend:
// updates are applied in order, the last one reflecting the latest state.
func TestListChangedUpdatesApplyInOrder(t *testing.T) {
	t.Parallel()
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	// No health monitor loop: the test drives the tracker itself.
	g := startGateway(t, backendsYAML(nil, alpha, beta)+"timeouts: {call: 2s, initialize: 2s}\nhealth: {interval: 1h, timeout: 1s, unhealthyThreshold: 1}\nnotifications: {listChanged: true}\n")
	// The monitor's one probe (at start) lands before the flips.
	testwait.For(t, 10*time.Second, "the first probe", func() bool { return healthOf(t, g).Backends["beta"].Status == "healthy" })
	c, _ := listeningClient(t, g.URL())
	if !hasPrefix(toolNames(t, c), "beta_") {
		t.Fatal("beta missing at start")
	}
	boom := errors.New("probe failed")
	for round := 0; round < 5; round++ {
		for i := 0; i < 40; i++ {
			vmcp.RecordHealth(g, "beta", boom) // → unhealthy: hide
			vmcp.RecordHealth(g, "beta", nil)  // → degraded: show
		}
		testwait.For(t, 10*time.Second, "view updates to settle", func() bool { return vmcp.ViewUpdatesIdle(g) })
		if st := healthOf(t, g).Backends["beta"].Status; st != "degraded" {
			t.Fatalf("beta %s after the flips, want degraded", st)
		}
		if !hasPrefix(toolNames(t, c), "beta_") {
			t.Fatalf("round %d: beta is usable but hidden from the live session", round)
		}
	}
	// And the other way round: ending unavailable hides it.
	for i := 0; i < 40; i++ {
		vmcp.RecordHealth(g, "beta", nil)
		vmcp.RecordHealth(g, "beta", boom)
	}
	testwait.For(t, 10*time.Second, "view updates to settle", func() bool { return vmcp.ViewUpdatesIdle(g) })
	if hasPrefix(toolNames(t, c), "beta_") {
		t.Fatal("beta is unhealthy but still in the live session")
	}
}

// TestKeepaliveStartsOnLateJoin: a backend down when a session opened
// joins it later (list_changed), and from then on that session's backend
// session is kept alive like any other: beta receives its pings. (The
// keeper was started at the session's opening only, so a late-joined
// backend was never probed.) Serial, as the late-join test above.
func TestKeepaliveStartsOnLateJoin(t *testing.T) {
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, backendsYAML(map[string]string{
		"beta": "    keepalive: {method: ping, interval: 200ms, jitter: 10ms, timeout: 200ms, maxFailures: 3, probeAfter: 1h}\n",
	}, alpha, beta)+listChangedCfg)
	testwait.For(t, 5*time.Second, "beta unhealthy", func() bool { return healthOf(t, g).Backends["beta"].Status == "unhealthy" })
	c, notes := listeningClient(t, g.URL())
	beta.ClearFaults()
	testwait.For(t, 15*time.Second, "beta to join the live session", func() bool { return notes.Load() >= 1 && hasPrefix(toolNames(t, c), "beta_") })
	st, _ := g.Session(c.GetSessionId())
	testwait.For(t, 10*time.Second, "keepalive pings of the late-joined backend session at beta", func() bool {
		ms, _ := st.BackendState("beta")
		n := 0
		for _, r := range beta.Requests() {
			if r.Method == "ping" && ms.SessionID != "" && r.SessionID == ms.SessionID {
				n++
			}
		}
		return n >= 3
	})
}

// TestToolOfBackendDownAtSessionStartNamesIt: a session opened while beta
// was down has none of beta's tools; a call of one (the client knew its
// name from before) is answered with an error naming beta and why, not an
// anonymous "tool not found" the client cannot tell from a typo. A name
// no backend has stays "not found".
func TestToolOfBackendDownAtSessionStartNamesIt(t *testing.T) {
	t.Parallel()
	alpha, beta := startFake(t, resAlphaScript), startFake(t, resBetaScript)
	if err := beta.SetFaults(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, backendsYAML(nil, alpha, beta)+"timeouts: {call: 2s, initialize: 2s}\n")
	c := connect(t, g.URL(), false)
	if hasPrefix(toolNames(t, c), "beta_") {
		t.Fatal("beta's tools in a session opened while beta was down")
	}
	res, _ := callTool(t, c, "beta_ok", nil)
	if !res.IsError || !strings.Contains(resultText(res), `"beta"`) {
		t.Fatalf("a tool of beta, down when the session opened: %q (isError %v), want an error naming beta", resultText(res), res.IsError)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "nosuch_tool"
	if _, err := c.CallTool(ctxT(t, 10*time.Second), req); err == nil {
		t.Fatal("a tool no backend has: want a JSON-RPC error (not found)")
	}

	// The optimizer's call_tool names it too; a name no backend has stays
	// a bare "tool not found".
	og := startGateway(t, backendsYAML(nil, alpha, beta)+"timeouts: {call: 2s, initialize: 2s}\noptimizer: {enabled: true}\n")
	oc := connect(t, og.URL(), false)
	res, _ = callTool(t, oc, "call_tool", map[string]any{"tool_name": "beta_ok"})
	if !res.IsError || !strings.Contains(resultText(res), `"beta"`) {
		t.Fatalf("call_tool of beta's tool, beta down when the session opened: %q (isError %v), want an error naming beta", resultText(res), res.IsError)
	}
	res, _ = callTool(t, oc, "call_tool", map[string]any{"tool_name": "nosuch_tool"})
	if got := resultText(res); !res.IsError || strings.Contains(got, "beta") || !strings.Contains(got, "tool not found: nosuch_tool") {
		t.Fatalf("call_tool of a tool no backend has: %q (isError %v), want a bare tool not found", got, res.IsError)
	}
}
