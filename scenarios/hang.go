package scenarios

import (
	"context"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
)

// Bounds of the hang scenarios. They are generous on purpose: "does not
// hang" is the assertion; the measured latencies go to the results.
const (
	hangCallTimeout    = 500 * time.Millisecond // the gateway's backend call timeout
	transportBound     = time.Second            // a transport failure surfaces within this
	stallSlack         = time.Second            // a stall surfaces within the call timeout + this
	hangClientDeadline = 5 * time.Second        // the client's own deadline, well past the bounds
)

// hangCase is one way for beta to fail a tools/call.
type hangCase struct {
	name  string
	fault fakebackends.Fault
	stall bool // a stall: bounded by the call timeout, not by transportBound
	// transports limits the case to these backend transports (nil: all).
	transports []fakebackends.Transport
}

func onCall(f fakebackends.Fault) fakebackends.Fault {
	f.Match = fakebackends.Match{Method: "tools/call"}
	return f
}

func hangCases() []hangCase {
	crash := func(mode, stage string) fakebackends.Fault {
		return onCall(fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: mode, Stage: stage})
	}
	stall := func(stage string) fakebackends.Fault {
		return onCall(fakebackends.Fault{Kind: fakebackends.KindStall, Stage: stage})
	}
	status := func(code int) fakebackends.Fault {
		return onCall(fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: code})
	}
	malformed := func(variant string) fakebackends.Fault {
		return onCall(fakebackends.Fault{Kind: fakebackends.KindMalformed, Variant: variant})
	}
	return []hangCase{
		{name: "403_after_initialize", fault: status(403)},
		{name: "401", fault: onCall(fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 401,
			Headers: map[string]string{"WWW-Authenticate": `Bearer realm="beta"`}})},
		{name: "500", fault: status(500)},
		{name: "crash_eof", fault: crash(fakebackends.CrashEOF, "")},
		{name: "crash_reset", fault: crash(fakebackends.CrashReset, "")},
		{name: "sse_cut", fault: crash(fakebackends.CrashEOF, fakebackends.StageAfterHeaders)},
		{name: "down", fault: fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: fakebackends.CrashDown}},
		{name: "malformed_invalid_json", fault: malformed(fakebackends.MalformedInvalidJSON)},
		{name: "malformed_wrong_id", fault: malformed(fakebackends.MalformedWrongID)},
		{name: "malformed_truncated_sse", fault: malformed(fakebackends.MalformedTruncatedSSE)},
		{name: "stall_before_headers", fault: stall(fakebackends.StageBeforeHeaders), stall: true},
		{name: "stall_after_headers", fault: stall(fakebackends.StageAfterHeaders), stall: true},
		{name: "stall_after_progress", fault: stall(fakebackends.StageAfterProgress), stall: true},
		{name: "stall_mid_body", fault: stall(fakebackends.StageMidBody), stall: true},
	}
}

func (hc hangCase) appliesTo(t fakebackends.Transport) bool {
	if hc.transports == nil {
		return true
	}
	for _, x := range hc.transports {
		if x == t {
			return true
		}
	}
	return false
}

func hangTopology(v Variant) func() harness.Topology {
	return func() harness.Topology {
		return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: hangCallTimeout,
			ClientOptions: []harness.ClientOption{harness.WithCallTimeout(hangClientDeadline)}}
	}
}

// hangScenarios: scenario 2, calls that never hang.
func hangScenarios() []Scenario {
	out := variants("hang", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "403/401/500, crash (EOF, reset), down, SSE cut, malformed and stalls at each stage: the call returns an error, " +
				"transport failures within 1 s, stalls within the call timeout + 1 s",
			Labels:   []string{LabelHang},
			Timeout:  90 * time.Second,
			Topology: hangTopology(v),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHang(ctx, env, g, v) },
		}
	})
	out = append(out, variants("hang-cancel", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "a client that cancels its call gets it back within 1 s, and the backend call is cancelled: " +
				"it ends, and a legacy backend session receives notifications/cancelled",
			Labels:  []string{LabelHang},
			Timeout: 30 * time.Second,
			Topology: func() harness.Topology {
				return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: 30 * time.Second,
					ClientOptions: []harness.ClientOption{harness.WithCallTimeout(hangClientDeadline)}}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHangCancel(ctx, env, g, v) },
		}
	})...)
	out = append(out, variants("hang-kill", []Variant{
		{harness.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{harness.RevisionModern, fakebackends.TransportStreamableHTTP},
		{harness.RevisionLegacy, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "a backend process SIGKILLed mid-call: the call in flight and the next call fail within 1 s; after a respawn the backend works again",
			Labels:      []string{LabelHang, LabelProcess},
			Timeout:     60 * time.Second,
			Topology: func() harness.Topology {
				slow := script(beta, v.Transport)
				slow.Tools[1].Delay = fakebackends.Duration(20 * time.Second)
				return harness.Topology{
					Backends: []harness.BackendSpec{
						{Script: script(alpha, fakebackends.TransportStreamableHTTP)},
						{Script: slow, Runtime: harness.Process{}},
					},
					GatewayCallTimeout: 30 * time.Second,
					ClientOptions:      []harness.ClientOption{harness.WithCallTimeout(hangClientDeadline)},
				}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHangKill(ctx, env, g, v) },
		}
	})...)
	out = append(out, variants("hang-pause", []Variant{
		{harness.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{harness.RevisionModern, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "a backend process SIGSTOPped with a call in flight (it still accepts connections, never answers): that call and the next fail " +
				"within the call timeout + 1 s, the other backend keeps working; after SIGCONT the backend works again",
			Labels:  []string{LabelHang, LabelProcess},
			Timeout: 60 * time.Second,
			Topology: func() harness.Topology {
				slow := script(beta, v.Transport)
				slow.Tools[1].Delay = fakebackends.Duration(pauseSlowDelay)
				return harness.Topology{
					Backends: []harness.BackendSpec{
						{Script: script(alpha, fakebackends.TransportStreamableHTTP)},
						{Script: slow, Runtime: harness.Process{}},
					},
					GatewayCallTimeout: pauseCallTimeout,
					ClientOptions:      []harness.ClientOption{harness.WithCallTimeout(hangClientDeadline)},
				}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHangPause(ctx, env, g, v) },
		}
	})...)
	return out
}

func runHang(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	c := client(ctx, env, g, v.Revision)
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before any fault")
	for _, hc := range hangCases() {
		if !hc.appliesTo(v.Transport) {
			continue
		}
		must(g, env.SetFaults(ctx, beta, hc.fault), "set %s on beta", hc.name)
		call := c.CallTool(ctx, tool(beta, "echo"), echoArgs(hc.name))
		bound := transportBound
		if hc.stall {
			bound = hangCallTimeout + stallSlack
		}
		env.Recorder().SetFigure("time_to_error_ms."+hc.name, ms(call.Took()))
		expectFailed(g, call, hc.name)
		g.Expect(call).To(matchers.ReturnWithin(bound), "%s: the error must come within %s", hc.name, bound)

		// The bystander still answers, and beta recovers once cleared.
		expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs(hc.name)), "alpha while beta fails with "+hc.name)
		must(g, env.ClearFaults(ctx, beta), "clear beta")
		// Cleared, beta answers the next call. Except one case: on the
		// SSE transport a mid_body stall leaves half an event on the
		// shared event stream (the fake never finishes it), so the next
		// response arrives glued to it; one failed call is allowed there.
		allowed := 0
		if hc.fault.Stage == fakebackends.StageMidBody && v.Transport == fakebackends.TransportSSE {
			allowed = 1
		}
		// "down" closes the listener and drops every connection: on SSE
		// that cuts the gateway's event stream, which (as after a
		// restart) the gateway may learn of only from the next call.
		if hc.fault.Mode == fakebackends.CrashDown && v.Transport == fakebackends.TransportSSE {
			allowed = 1
		}
		failed := callsUntilOK(ctx, g, c, tool(beta, "echo"), allowed+1)
		env.Recorder().SetFigure("failed_calls_after_clear."+hc.name, float64(failed))
	}
}

func runHangCancel(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	c := client(ctx, env, g, v.Revision)
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before any fault")
	must(g, env.SetFaults(ctx, beta, fakebackends.Fault{Kind: fakebackends.KindStall, Stage: fakebackends.StageBeforeHeaders,
		Match: fakebackends.Match{Method: "tools/call", Tool: "slow"}}), "stall beta's slow")
	before, err := countRequests(ctx, env, beta, "notifications/cancelled")
	must(g, err, "read beta's request log")

	callCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan *harness.Call, 1)
	go func() { done <- c.CallTool(callCtx, tool(beta, "slow"), nil) }()
	// Wait until the call has reached beta, then give up on it.
	reached := waitUntil(ctx, 5*time.Second, func() bool {
		n, _ := countRequests(ctx, env, beta, "tools/call")
		if n > 1 {
			return true
		}
		if fb, ok := harness.FakeBackend(env.Backend(beta)); ok {
			return fb.InFlight() > 0
		}
		return false
	})
	g.Expect(reached).To(gomega.BeTrue(), "the slow call reached beta")
	cancelled := time.Now()
	cancel()
	var call *harness.Call
	select {
	case call = <-done:
	case <-time.After(transportBound + 5*time.Second):
	}
	returned := time.Since(cancelled)
	g.Expect(call).NotTo(gomega.BeNil(), "the cancelled call returned")
	env.Recorder().SetFigure("cancel_return_ms", ms(returned))
	g.Expect(returned).To(gomega.BeNumerically("<=", transportBound), "the cancelled call returned %s after the cancel", returned)
	g.Expect(call.Outcome).NotTo(gomega.Equal(harness.OutcomeOK), "a cancelled call does not succeed")

	// The backend call is cancelled: beta's stalled tools/call ends (it
	// would stall until the fault is cleared otherwise), and on a legacy
	// (2025-11-25) backend session beta is also sent
	// notifications/cancelled. On the stateless revision closing the
	// request is the cancellation.
	var slow *fakebackends.RequestRecord
	var cancels int
	seen := waitUntil(ctx, 3*time.Second, func() bool {
		reqs, err := env.Backend(beta).Requests(ctx)
		if err != nil {
			return false
		}
		cancels = 0
		for _, r := range reqs {
			switch {
			case r.Method == "tools/call" && r.Tool == "slow":
				slow = &r
			case r.Method == "notifications/cancelled":
				cancels++
			}
		}
		return slow != nil && (slow.Protocol != string(fakebackends.ProtocolLegacy) || cancels > before)
	})
	env.Recorder().SetFigure("backend_cancelled_ms", ms(time.Since(cancelled)))
	g.Expect(slow).NotTo(gomega.BeNil(), "beta's stalled tools/call ended within 3 s of the client cancelling")
	g.Expect(seen).To(gomega.BeTrue(), "beta (%s session) received notifications/cancelled within 3 s of the client cancelling (had %d, now %d)", slow.Protocol, before, cancels)
	env.Note("beta's slow call ended after %.1f ms on a %s backend session; notifications/cancelled: %d", slow.DurationMS, slow.Protocol, cancels-before)

	must(g, env.ClearFaults(ctx, beta), "clear beta")
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("after cancel")), "beta after the cancel")
}

// The hang-pause scenario: beta's slow tool would answer after
// pauseSlowDelay, within the call timeout, had beta not been stopped.
const (
	pauseCallTimeout = 2 * time.Second
	pauseSlowDelay   = 1500 * time.Millisecond
)

// slowCallInFlight starts a call of beta's slow tool and returns, once the
// call has had time to reach beta and is still pending, the channel its
// result arrives on (buffered: the call's own deadline ends it). A process
// backend logs a request only when it ends, so there is nothing to poll:
// the call is given 300 ms, well within the slow tool's delay.
func slowCallInFlight(ctx context.Context, g gomega.Gomega, c *harness.Client, before string) <-chan *harness.Call {
	done := make(chan *harness.Call, 1)
	go func() { done <- c.CallTool(ctx, tool(beta, "slow"), nil) }()
	sleep(ctx, 300*time.Millisecond)
	g.ExpectWithOffset(1, done).To(gomega.BeEmpty(), "the slow call was still in flight at %s", before)
	return done
}

func runHangPause(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	c := client(ctx, env, g, v.Revision)
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before the pause")

	done := slowCallInFlight(ctx, g, c, "the SIGSTOP")
	must(g, env.PauseBackend(ctx, beta), "SIGSTOP beta")
	resumed := false
	defer func() {
		if !resumed {
			_ = env.ResumeBackend(context.WithoutCancel(ctx), beta)
		}
	}()
	bound := pauseCallTimeout + stallSlack
	var inflight *harness.Call
	select {
	case inflight = <-done:
	case <-time.After(bound + 5*time.Second):
	}
	g.Expect(inflight).NotTo(gomega.BeNil(), "the call in flight at the SIGSTOP returned")
	env.Recorder().SetFigure("time_to_error_ms.sigstop_in_flight", ms(inflight.Took()))
	expectFailed(g, inflight, "call in flight during SIGSTOP")
	g.Expect(inflight).To(matchers.ReturnWithin(bound), "the call in flight at the SIGSTOP")

	next := c.CallTool(ctx, tool(beta, "echo"), echoArgs("stopped"))
	env.Recorder().SetFigure("time_to_error_ms.sigstop_next_call", ms(next.Took()))
	expectFailed(g, next, "call to a stopped backend")
	g.Expect(next).To(matchers.ReturnWithin(bound), "a call to the stopped backend")
	bystander := c.CallTool(ctx, tool(alpha, "echo"), echoArgs("bystander"))
	expectOK(g, bystander, "alpha while beta is stopped")
	g.Expect(bystander).To(matchers.ReturnWithin(transportBound).As("latency_ms.bystander_while_stopped"), "alpha while beta is stopped")

	must(g, env.ResumeBackend(ctx, beta), "SIGCONT beta")
	resumed = true
	failed := callsUntilOK(ctx, g, c, tool(beta, "echo"), 2)
	env.Recorder().SetFigure("failed_calls_after_sigcont", float64(failed))
	g.Expect(failed).To(gomega.BeNumerically("<=", 1), "failed calls after SIGCONT")
}

func runHangKill(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	c := client(ctx, env, g, v.Revision)
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before the kill")

	done := slowCallInFlight(ctx, g, c, "the kill")
	killed := time.Now()
	must(g, env.KillBackend(ctx, beta), "SIGKILL beta")
	var inflight *harness.Call
	select {
	case inflight = <-done:
	case <-time.After(transportBound + 5*time.Second):
	}
	g.Expect(inflight).NotTo(gomega.BeNil(), "the call in flight returned after the kill")
	sinceKill := time.Since(killed)
	env.Recorder().SetFigure("time_to_error_ms.sigkill_in_flight", ms(sinceKill))
	expectFailed(g, inflight, "call in flight during SIGKILL")
	g.Expect(sinceKill).To(gomega.BeNumerically("<=", transportBound), "the call in flight failed %s after the SIGKILL", sinceKill)

	next := c.CallTool(ctx, tool(beta, "echo"), echoArgs("dead"))
	env.Recorder().SetFigure("time_to_error_ms.sigkill_next_call", ms(next.Took()))
	expectFailed(g, next, "call to a killed backend")
	g.Expect(next).To(matchers.ReturnWithin(transportBound))
	expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs("bystander")), "alpha while beta is dead")

	must(g, env.RespawnBackend(ctx, beta), "respawn beta")
	failed := callsUntilOK(ctx, g, c, tool(beta, "echo"), 3)
	env.Recorder().SetFigure("failed_calls_after_respawn", float64(failed))
	g.Expect(failed).To(gomega.BeNumerically("<=", allowedFailures(env, v.Transport)), "failed calls after the respawn")
}

// allowedFailures is how many failed calls a backend restart may cost:
// one, and none for a gateway that declares harness.CapReinitOn404 (the
// reference, in-process or as `chaos vmcp`) where the restart shows as a
// 404 for the backend session (streamable HTTP), which it answers by
// re-initializing and retrying. On the SSE transport a restart cuts the
// event stream, a connection failure the gateway may learn of only from
// the call it has just sent, so one failed call is allowed there too.
func allowedFailures(env *harness.Env, transport fakebackends.Transport) int {
	if env.Capabilities().Has(harness.CapReinitOn404) && transport == fakebackends.TransportStreamableHTTP {
		return 0
	}
	return 1
}

// callsUntilOK calls name until it succeeds (at most max calls) and
// returns how many calls failed first; it fails the scenario when none
// succeeded.
func callsUntilOK(ctx context.Context, g gomega.Gomega, c *harness.Client, name string, max int) int {
	var last *harness.Call
	for i := 0; i < max; i++ {
		last = c.CallTool(ctx, name, echoArgs("probe"))
		if last.Outcome == harness.OutcomeOK {
			return i
		}
	}
	g.ExpectWithOffset(1, last.Outcome).To(gomega.Equal(harness.OutcomeOK), "%s never succeeded in %d calls: %s", name, max, last.Text())
	return max
}
