package runtimes_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

var http403 = faults.Fault{Kind: faults.KindHTTPStatus, Match: faults.Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: 403, Body: &faults.Body{Text: "Forbidden"}}}

func allRuntimes(t *testing.T) []runtimes.BackendRuntime {
	return []runtimes.BackendRuntime{runtimes.InProcess{}, runtimes.Process{Binary: chaosBin(t)}}
}

func TestRuntimeFaultsThroughInterface(t *testing.T) {
	for _, rt := range allRuntimes(t) {
		t.Run(rt.Name(), func(t *testing.T) {
			b := startBackend(t, rt, script("beta", fakebackends.TransportStreamableHTTP))
			if b.Name() != "beta" || !strings.HasSuffix(b.URL(), "/mcp") || b.AdminURL() == "" || b.Transport() != fakebackends.TransportStreamableHTTP {
				t.Fatalf("identity: %q %q %q %q", b.Name(), b.URL(), b.AdminURL(), b.Transport())
			}
			if info := b.Info(); info.Name != "beta" || info.URL != b.URL() || info.Transport != "streamable-http" {
				t.Fatalf("Info: %+v", info)
			}
			rec := history.NewRecorder("rt")
			c := dialBackend(t, b, history.RevisionLegacy, rec)
			ctx := ctxT(t, 20*time.Second)
			if call := c.CallTool(ctx, "echo", map[string]any{"msg": "hi"}); call.Outcome != history.OutcomeOK || !strings.Contains(call.Text(), "hi") {
				t.Fatalf("healthy call: %+v %v", call.CallRecord, call.Err)
			}
			if err := b.SetFaults(ctx, http403); err != nil {
				t.Fatalf("SetFaults: %v", err)
			}
			call := c.CallTool(ctx, "echo", map[string]any{"msg": "hi"})
			if call.Err == nil || call.Outcome != history.OutcomeError || call.Took() > failFast {
				t.Fatalf("403 call: %+v %v", call.CallRecord, call.Err)
			}
			if err := b.SetFaults(ctx, faults.Fault{Kind: "bogus"}); err == nil {
				t.Fatal("SetFaults accepted a bogus fault")
			}
			if err := b.ClearFaults(ctx); err != nil {
				t.Fatalf("ClearFaults: %v", err)
			}
			if call := c.CallTool(ctx, "echo", map[string]any{"msg": "again"}); call.Outcome != history.OutcomeOK {
				t.Fatalf("after clear: %+v %v", call.CallRecord, call.Err)
			}
			reqs, err := b.Requests(ctx)
			if err != nil || len(reqs) == 0 {
				t.Fatalf("Requests: %d %v", len(reqs), err)
			}
			if n, err := b.ExpireSessions(ctx); err != nil || n < 1 {
				t.Fatalf("ExpireSessions: %d %v", n, err)
			}
			if err := b.Restart(ctx); err != nil {
				t.Fatalf("Restart: %v", err)
			}
			if got := len(rec.Calls()); got != 4 { // initialize + 3 calls
				t.Fatalf("recorded %d calls, want 4", got)
			}
		})
	}
}

func TestInProcessSignalsNotSupported(t *testing.T) {
	b := startBackend(t, runtimes.InProcess{}, script("alpha", fakebackends.TransportSSE))
	ctx := ctxT(t, 5*time.Second)
	for name, fn := range map[string]func(context.Context) error{"kill": b.Kill, "pause": b.Pause, "resume": b.Resume} {
		if err := fn(ctx); !errors.Is(err, runtimes.ErrNotSupported) {
			t.Errorf("%s: %v, want ErrNotSupported", name, err)
		}
	}
	if _, err := (runtimes.InProcess{}).Start(ctx, script("s", fakebackends.TransportStdio)); !errors.Is(err, runtimes.ErrNotSupported) {
		t.Errorf("stdio in-process: %v", err)
	}
}

func TestProcessKillPauseResume(t *testing.T) {
	b := startBackend(t, runtimes.Process{Binary: chaosBin(t)}, script("beta", fakebackends.TransportStreamableHTTP))
	rec := history.NewRecorder("signals")
	c := dialBackend(t, b, history.RevisionLegacy, rec, history.WithCallTimeout(700*time.Millisecond))
	ctx := ctxT(t, 30*time.Second)

	// Pause: the call is held until its deadline, then resume serves again.
	if err := b.Pause(ctx); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	call := c.CallTool(ctx, "echo", map[string]any{"msg": "held"})
	if call.Outcome != history.OutcomeTimeout || call.Took() < 600*time.Millisecond || call.Took() > failFast {
		t.Fatalf("paused call: %+v %v", call.CallRecord, call.Err)
	}
	if err := b.Resume(ctx); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	// The session may be gone after the cut request; a fresh client works.
	c2 := dialBackend(t, b, history.RevisionLegacy, rec)
	if call := c2.CallTool(ctx, "echo", map[string]any{"msg": "back"}); call.Outcome != history.OutcomeOK {
		t.Fatalf("after resume: %+v %v", call.CallRecord, call.Err)
	}

	// Kill: the next call fails fast: refused (error), or, sent on the
	// kept-alive connection before the client saw it close, dropped.
	if err := b.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	call = c2.CallTool(ctx, "echo", map[string]any{"msg": "dead"})
	if call.Err == nil || (call.Outcome != history.OutcomeError && call.Outcome != history.OutcomeDropped) || call.Took() > failFast {
		t.Fatalf("killed call: %+v %v", call.CallRecord, call.Err)
	}
	if err := b.Pause(ctx); err == nil {
		t.Fatal("Pause of a dead process succeeded")
	}

	// Respawn: same URL, serving again. The URL's port is below the
	// kernel's ephemeral range, where no outgoing connection takes it
	// while the process is down.
	url := b.URL()
	if port := portOf(t, url); port >= ephemeralLow(t) {
		t.Errorf("backend on %s: port %d in the ephemeral range (from %d)", url, port, ephemeralLow(t))
	}
	if err := b.(runtimes.Respawner).Respawn(ctx); err != nil {
		t.Fatalf("Respawn: %v", err)
	}
	if b.URL() != url {
		t.Fatalf("respawned on %s, want %s", b.URL(), url)
	}
	c3 := dialBackend(t, b, history.RevisionModern, rec)
	if call := c3.CallTool(ctx, "echo", map[string]any{"msg": "reborn"}); call.Outcome != history.OutcomeOK {
		t.Fatalf("after respawn: %+v %v", call.CallRecord, call.Err)
	}
}

func TestProcessCloseBoundedWhilePaused(t *testing.T) {
	bin := chaosBin(t)
	b, err := runtimes.Process{Binary: bin}.Start(ctxT(t, 30*time.Second), script("beta", fakebackends.TransportSSE))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := b.Close(ctxT(t, 5*time.Second)); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(start); d > 4*time.Second { // within Close's 5 s, not at its end
		t.Fatalf("Close took %v", d)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestProcessStartErrors(t *testing.T) {
	bin := chaosBin(t)
	s := script("bad", fakebackends.TransportStreamableHTTP)
	s.Listen = "256.0.0.1:1"
	_, err := runtimes.Process{Binary: bin}.Start(ctxT(t, 20*time.Second), s)
	if err == nil || !strings.Contains(err.Error(), "bad") || !strings.Contains(err.Error(), "stderr") {
		t.Fatalf("bad listen: %v", err)
	}
	_, err = runtimes.Process{Binary: "/nonexistent/chaos"}.Start(ctxT(t, 5*time.Second), script("x", fakebackends.TransportStreamableHTTP))
	if err == nil {
		t.Fatal("nonexistent binary started")
	}
}

func TestProcessStdioGivesCommand(t *testing.T) {
	b := startBackend(t, runtimes.Process{Binary: chaosBin(t)}, script("gamma", fakebackends.TransportStdio))
	info := b.Info()
	if info.Transport != "stdio" || len(info.Command) < 4 || info.Command[1] != "backend" || info.URL != "" {
		t.Fatalf("Info: %+v", info)
	}
	if err := b.SetFaults(context.Background()); !errors.Is(err, runtimes.ErrNotSupported) {
		t.Fatalf("SetFaults on stdio: %v", err)
	}
	// The script file round-trips through the strict parser.
	data, err := readFile(info.Command[3])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fakebackends.ParseScript(data, info.Command[3]); err != nil {
		t.Fatalf("written script does not parse: %v\n%s", err, data)
	}
}

// A respawn whose pinned address another process holds for a while (here
// the control API's, held 500 ms) starts once it is free again, on the
// same addresses.
func TestProcessRespawnWaitsForATakenAddress(t *testing.T) {
	b := startBackend(t, runtimes.Process{Binary: chaosBin(t)}, script("beta", fakebackends.TransportStreamableHTTP))
	ctx := ctxT(t, 30*time.Second)
	if err := b.Kill(ctx); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	admin, err := url.Parse(b.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	deadline := time.Now().Add(5 * time.Second)
	for ln, err = net.Listen("tcp", admin.Host); err != nil; ln, err = net.Listen("tcp", admin.Host) {
		if time.Now().After(deadline) {
			t.Fatalf("take the killed backend's control address: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	go func() {
		time.Sleep(500 * time.Millisecond)
		ln.Close()
	}()
	mcpURL, adminURL := b.URL(), b.AdminURL()
	if err := b.(runtimes.Respawner).Respawn(ctx); err != nil {
		t.Fatalf("Respawn with its control address taken for 500 ms: %v", err)
	}
	if b.URL() != mcpURL || b.AdminURL() != adminURL {
		t.Errorf("respawned on %s %s, want %s %s", b.URL(), b.AdminURL(), mcpURL, adminURL)
	}
	if err := b.ClearFaults(ctx); err != nil {
		t.Errorf("the respawned backend's control API: %v", err)
	}
}

// portOf is the port of a URL.
func portOf(t *testing.T, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return p
}

// ephemeralLow is the first port of the kernel's ephemeral range.
func ephemeralLow(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to compare with: %v", err)
	}
	var lo, hi int
	if _, err := fmt.Sscan(string(b), &lo, &hi); err != nil {
		t.Fatal(err)
	}
	return lo
}
