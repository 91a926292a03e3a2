package scenarios

import (
	"context"
	"sync"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
)

const sessionCallTimeout = 500 * time.Millisecond

// sessionScenarios: scenario 5, per-backend session state. Sessions exist
// on the legacy (2025-11-25) revision only.
func sessionScenarios() []Scenario {
	return variants("session", []Variant{
		{harness.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{harness.RevisionLegacy, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "after a failed call the session reports that backend as error with lastError; the next success clears it; " +
				"a stalled call never leaves the session busy",
			Labels:  []string{LabelSession},
			Needs:   []harness.Capability{harness.CapSessionAPI},
			Timeout: 30 * time.Second,
			Topology: func() harness.Topology {
				return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: sessionCallTimeout,
					ClientOptions: []harness.ClientOption{harness.WithCallTimeout(sessionCallTimeout + 5*time.Second)}}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runSession(ctx, env, g, v) },
		}
	})
}

// sessionStates reads the session's backend states, recording a
// transition for each change since the last read.
type sessionWatcher struct {
	env  *harness.Env
	id   string
	mu   sync.Mutex
	last map[string]string
}

func (w *sessionWatcher) read(ctx context.Context) (harness.BackendStates, error) {
	states, err := w.env.SessionStates(ctx, w.id)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, st := range states {
		if w.last[name] != st.State {
			w.env.Recorder().RecordTransition(harness.TransitionRecord{Backend: name, Aspect: "session",
				From: w.last[name], To: st.State, Source: harness.SessionPath + w.id})
			w.last[name] = st.State
		}
	}
	return states, nil
}

func runSession(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	c := client(ctx, env, g, v.Revision)
	g.Expect(c.SessionID()).NotTo(gomega.BeEmpty(), "a legacy client has a session")
	w := &sessionWatcher{env: env, id: c.SessionID(), last: map[string]string{}}
	settled := []string{"connected", "error"} // anything else (busy, ...) is wrong once calls have returned

	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before any fault")
	states, err := w.read(ctx)
	must(g, err, "read the session")
	g.Expect(states).To(matchers.HaveBackendState(beta, "connected"))
	g.Expect(states).To(matchers.HaveBackendState(alpha, "connected"))

	faults := []struct {
		name      string
		fault     fakebackends.Fault
		errorText string // lastError must mention it
	}{
		{"403", onCall(fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 403}), "403"},
		{"reset", onCall(fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: fakebackends.CrashReset}), ""},
		{"timeout", onCall(fakebackends.Fault{Kind: fakebackends.KindStall, Stage: fakebackends.StageBeforeHeaders}), ""},
	}
	for _, f := range faults {
		must(g, env.SetFaults(ctx, beta, f.fault), "set %s on beta", f.name)
		call := c.CallTool(ctx, tool(beta, "echo"), echoArgs(f.name))
		expectFailed(g, call, f.name)

		states, err := w.read(ctx)
		must(g, err, "read the session after %s", f.name)
		g.Expect(states).To(matchers.HaveBackendState(beta, "error"), "beta after a failed call (%s)", f.name)
		g.Expect(states[beta].LastError).NotTo(gomega.BeEmpty(), "beta's lastError after %s", f.name)
		if f.errorText != "" {
			g.Expect(states[beta].LastError).To(gomega.ContainSubstring(f.errorText), "beta's lastError after %s", f.name)
		}
		g.Expect(states).To(matchers.HaveBackendState(alpha, "connected"), "alpha is untouched by beta's %s", f.name)

		must(g, env.ClearFaults(ctx, beta), "clear beta")
		expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("after "+f.name)), "beta after "+f.name+" cleared")
		states, err = w.read(ctx)
		must(g, err, "read the session after recovery from %s", f.name)
		g.Expect(states).To(matchers.HaveBackendState(beta, "connected"), "the next success clears beta's error (%s)", f.name)
	}

	// A stalled call in flight: the session is not busy. Other calls in
	// the same session go through, and the state is never stuck.
	must(g, env.SetFaults(ctx, beta, fakebackends.Fault{Kind: fakebackends.KindStall, Stage: fakebackends.StageBeforeHeaders,
		Match: fakebackends.Match{Method: "tools/call", Tool: "slow"}}), "stall beta's slow")
	done := make(chan *harness.Call, 1)
	go func() { done <- c.CallTool(ctx, tool(beta, "slow"), nil) }()
	sleep(ctx, 100*time.Millisecond)
	during := c.CallTool(ctx, tool(beta, "echo"), echoArgs("during stall"))
	expectOK(g, during, "beta's echo while its slow call stalls in the same session")
	g.Expect(during).To(matchers.ReturnWithin(time.Second).As("latency_ms.echo_during_stall"))
	expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs("during stall")), "alpha while beta's slow call stalls")
	var stalled *harness.Call
	select {
	case stalled = <-done:
	case <-time.After(sessionCallTimeout + 5*time.Second):
	}
	g.Expect(stalled).NotTo(gomega.BeNil(), "the stalled call returned")
	expectFailed(g, stalled, "stalled call")
	states, err = w.read(ctx)
	must(g, err, "read the session after the stall")
	for _, name := range []string{alpha, beta} {
		g.Expect(states[name].State).To(gomega.BeElementOf(settled), "%s is settled after the stall, not stuck", name)
	}
	must(g, env.ClearFaults(ctx, beta), "clear beta")
	expectOK(g, c.CallTool(ctx, tool(beta, "slow"), nil), "beta's slow after the stall cleared")
	states, err = w.read(ctx)
	must(g, err, "read the session at the end")
	g.Expect(states).To(matchers.HaveBackendState(beta, "connected"), "beta at the end")
}
