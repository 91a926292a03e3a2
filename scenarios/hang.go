package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
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
	fault faults.Fault
	stall bool // a stall: bounded by the call timeout, not by transportBound
	// names: the error must also name the backend (a cut answer is the
	// backend failing, not a slow one).
	names bool
	// httpOnly: the case applies on a streamable-HTTP backend only.
	httpOnly bool
}

func hangCases() []hangCase {
	crash := func(mode, stage string) faults.Fault {
		return onCall(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: mode, Stage: stage}})
	}
	stall := func(stage string) faults.Fault {
		return onCall(faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: stage}})
	}
	status := func(code int) faults.Fault {
		return onCall(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: code}})
	}
	malformed := func(variant string) faults.Fault {
		return onCall(faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: variant}})
	}
	return []hangCase{
		{name: "403_after_initialize", fault: status(403)},
		{name: "401", fault: onCall(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 401, Headers: map[string]string{"WWW-Authenticate": `Bearer realm="beta"`}}})},
		{name: "500", fault: status(500)},
		{name: "crash_eof", fault: crash(faults.CrashEOF, "")},
		{name: "crash_reset", fault: crash(faults.CrashReset, "")},
		{name: "sse_cut", fault: crash(faults.CrashEOF, faults.StageAfterHeaders)},
		{name: "down", fault: faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashDown}}},
		{name: "malformed_invalid_json", fault: malformed(faults.MalformedInvalidJSON)},
		{name: "malformed_wrong_id", fault: malformed(faults.MalformedWrongID)},
		{name: "malformed_truncated_sse", fault: malformed(faults.MalformedTruncatedSSE)},
		// The first 16 bytes of the answer, then the connection closes
		// (on an SSE backend the answer goes to the session stream:
		// malformed_truncated_sse is that case).
		{name: "truncate", fault: onCall(faults.Fault{Kind: faults.KindTruncate, Params: &faults.Truncate{Size: 16}}), names: true, httpOnly: true},
		{name: "stall_before_headers", fault: stall(faults.StageBeforeHeaders), stall: true},
		{name: "stall_after_headers", fault: stall(faults.StageAfterHeaders), stall: true},
		{name: "stall_after_progress", fault: stall(faults.StageAfterProgress), stall: true},
		{name: "stall_mid_body", fault: stall(faults.StageMidBody), stall: true},
	}
}

// slowProcessTopology is alpha in process and beta as a process whose slow
// tool answers after slowDelay, behind a gateway with callTimeout.
func slowProcessTopology(v Variant, slowDelay, callTimeout time.Duration) func() harness.Topology {
	return twoBackendsTopology(v, callTimeout, hangClientDeadline, func(t *harness.Topology) {
		t.Backends[1].Runtime = runtimes.Process{}
		t.Backends[1].Script.Tools[1].Delay = fakebackends.Duration(slowDelay)
	})
}

// hangScenarios: scenario 2, calls that never hang.
func hangScenarios() []Scenario {
	out := variants("hang", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "403/401/500, crash (EOF, reset), down, SSE cut, malformed, a truncated answer (naming the backend) and stalls at each stage: the call returns an error, " +
				"transport failures within 1 s, stalls within the call timeout + 1 s",
			Labels:   []string{LabelHang},
			Timeout:  90 * time.Second,
			Topology: twoBackendsTopology(v, hangCallTimeout, hangClientDeadline),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHang(ctx, env, g, v) },
		}
	})
	out = append(out, variants("hang-cancel", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "a client cancels a call stalled at beta, and the gateway cancels beta's call, judged by beta's log: " +
				"the stalled request ends within 3 s of the cancel, and a legacy backend session receives notifications/cancelled naming it",
			Labels:   []string{LabelHang},
			Timeout:  30 * time.Second,
			Topology: twoBackendsTopology(v, 30*time.Second, hangClientDeadline),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHangCancel(ctx, env, g, v) },
		}
	})...)
	out = append(out, variants("hang-kill", []Variant{
		{history.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{history.RevisionModern, fakebackends.TransportStreamableHTTP},
		{history.RevisionLegacy, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "a backend process SIGKILLed mid-call: the call in flight and the next call fail within 1 s; after a respawn the backend works again",
			Labels:      []string{LabelHang, LabelProcess},
			Timeout:     60 * time.Second,
			Topology:    slowProcessTopology(v, 20*time.Second, 30*time.Second),
			Run:         func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHangKill(ctx, env, g, v) },
		}
	})...)
	out = append(out, variants("hang-pause", []Variant{
		{history.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{history.RevisionModern, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "a backend process SIGSTOPped with a call in flight (it still accepts connections, never answers): that call and the next fail " +
				"within the call timeout + 1 s, the other backend keeps working; after SIGCONT the backend works again",
			Labels:   []string{LabelHang, LabelProcess},
			Timeout:  60 * time.Second,
			Topology: slowProcessTopology(v, pauseSlowDelay, pauseCallTimeout),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runHangPause(ctx, env, g, v) },
		}
	})...)
	return out
}

// hangRecovery bounds beta's recovery once a hang case's fault is
// cleared (generous: an SSE backend's stream may need re-opening).
const hangRecovery = 3 * time.Second

func runHang(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	defer k.WatchStalls()() // a call over its bound through a stall of the machine is no verdict (StalledOver)
	c := k.Client(v.Revision)
	betaEcho := k.Tool(beta, "echo")
	k.CheckServes("beta answers before any fault", c, c.CallTool(ctx, betaEcho, echoArgs("before")))
	for _, hc := range hangCases() {
		if hc.httpOnly && v.Transport != fakebackends.TransportStreamableHTTP {
			continue
		}
		c = k.Steady(c, hc.name)
		k.SetFaults(beta, hc.fault)
		call := c.CallTool(ctx, betaEcho, echoArgs(hc.name))
		bound, what := transportBound, "1 s"
		if hc.stall {
			bound, what = hangCallTimeout+stallSlack, "call timeout + 1 s"
		}
		// "Does not hang" is judged on a call the fault acted on: one the
		// gateway answered itself (it had dropped beta) says nothing of
		// how it treats a stalled or failing beta. A closed listener logs
		// nothing: there, the gateway naming beta says it tried beta.
		judge := func(ck *kit.C) { ck.FailsWithin(c, call, bound, "time_to_error_ms."+hc.name) }
		premise := k.FaultActed
		if cr, ok := hc.fault.Params.(*faults.Crash); ok && cr.Mode == faults.CrashDown {
			premise = k.Reached
		}
		k.CheckPremise(hc.name+": fails within "+what, premise(beta, call), call, judge)
		if hc.names {
			k.CheckCall(hc.name+": the error names beta", call, matchers.BeBackendUnavailable(beta))
		}

		// The bystander still answers, and beta recovers once cleared.
		bystander := c.CallTool(ctx, k.Tool(alpha, "echo"), echoArgs(hc.name))
		k.CheckBystander(hc.name+": alpha unaffected", []*history.Call{bystander}, func(ck *kit.C) { kit.ExpectOK(ck, bystander) })
		k.ClearFaults(beta)
		// "down" closes the listener and drops every connection: on SSE
		// that cuts the gateway's event stream, which (as after a
		// restart) the gateway may learn of only from the next call.
		allowed := 0
		if cr, ok := hc.fault.Params.(*faults.Crash); ok && cr.Mode == faults.CrashDown && v.Transport == fakebackends.TransportSSE {
			allowed = 1
		}
		k.CheckRecovery(fmt.Sprintf("%s: beta answers once cleared (at most %d failed calls)", hc.name, allowed), c, beta, hangRecovery, allowed, hc.name)
	}
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
func slowCallInFlight(k *kit.Kit, c *history.Client, before string) <-chan *history.Call {
	done := make(chan *history.Call, 1)
	slow := k.Tool(beta, "slow")
	go func() { done <- c.CallTool(k.Ctx, slow, nil) }()
	sleep(k.Ctx, 300*time.Millisecond)
	k.G.ExpectWithOffset(1, done).To(gomega.BeEmpty(), "the slow call was still in flight at %s", before)
	return done
}

func runHangPause(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	c := k.Client(v.Revision)
	betaEcho := k.Tool(beta, "echo")
	k.CheckServes("beta answers before the pause", c, c.CallTool(ctx, betaEcho, echoArgs("before")))

	c = k.Steady(c, "the SIGSTOP")
	done := slowCallInFlight(k, c, "the SIGSTOP")
	k.Must(env.PauseBackend(ctx, beta), "SIGSTOP beta")
	resumed := false
	defer func() {
		if !resumed {
			_ = env.ResumeBackend(context.WithoutCancel(ctx), beta)
		}
	}()
	bound := pauseCallTimeout + stallSlack
	inflight, _ := kit.Await(ctx, done, bound+5*time.Second)
	k.Check("the call in flight at the SIGSTOP fails within call timeout + 1 s", func(ck *kit.C) {
		ck.Expect(inflight).NotTo(gomega.BeNil(), "the call in flight at the SIGSTOP returned")
		ck.Evidence(inflight)
		k.TimeToError("time_to_error_ms.sigstop_in_flight", inflight, inflight.Took())
		ck.FailsWithin(c, inflight, bound, "")
	})

	next := c.CallTool(ctx, betaEcho, echoArgs("stopped"))
	k.TimeToError("time_to_error_ms.sigstop_next_call", next, next.Took())
	k.CheckCallWithin("the next call to the stopped backend fails within call timeout + 1 s", c, next, bound, "")
	bystander := c.CallTool(ctx, k.Tool(alpha, "echo"), echoArgs("bystander"))
	k.Check("alpha answers within 1 s while beta is stopped", func(ck *kit.C) {
		kit.ExpectOK(ck, bystander)
		ck.ReturnsWithin(c, bystander, transportBound, "latency_ms.bystander_while_stopped")
	})

	k.Must(env.ResumeBackend(ctx, beta), "SIGCONT beta")
	resumed = true
	k.CheckRecovery("beta answers after SIGCONT (at most 1 failed call)", c, beta, hangRecovery, 1, "sigcont")
}

func runHangKill(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	c := k.Client(v.Revision)
	betaEcho := k.Tool(beta, "echo")
	k.CheckServes("beta answers before the kill", c, c.CallTool(ctx, betaEcho, echoArgs("before")))

	c = k.Steady(c, "the SIGKILL")
	done := slowCallInFlight(k, c, "the kill")
	killed := time.Now()
	k.Must(env.KillBackend(ctx, beta), "SIGKILL beta")
	inflight, _ := kit.Await(ctx, done, transportBound+5*time.Second)
	sinceKill := time.Since(killed)
	k.Check("the call in flight at the SIGKILL fails within 1 s", func(ck *kit.C) {
		ck.Expect(inflight).NotTo(gomega.BeNil(), "the call in flight returned after the kill")
		ck.Evidence(inflight)
		k.TimeToError("time_to_error_ms.sigkill_in_flight", inflight, sinceKill)
		kit.ExpectFailed(ck, inflight)
		ck.TookWithin(c, "the call in flight's failure after the SIGKILL", killed, sinceKill, transportBound)
	})

	next := c.CallTool(ctx, betaEcho, echoArgs("dead"))
	k.TimeToError("time_to_error_ms.sigkill_next_call", next, next.Took())
	k.CheckCallWithin("the next call to the killed backend fails within 1 s", c, next, transportBound, "")
	k.CheckOK("alpha answers while beta is dead", c.CallTool(ctx, k.Tool(alpha, "echo"), echoArgs("bystander")))

	k.Must(env.RespawnBackend(ctx, beta), "respawn beta")
	allowed := allowedFailures(env, v.Transport)
	k.CheckRecovery(fmt.Sprintf("beta answers after the respawn (at most %d failed calls)", allowed), c, beta, hangRecovery, allowed, "respawn")
}

// allowedFailures is how many failed calls a backend restart may cost:
// one, and none for a gateway that declares targets.CapReinitOn404 (the
// reference, in-process or as `chaos vmcp`) where the restart shows as a
// 404 for the backend session (streamable HTTP), which it answers by
// re-initializing and retrying. On the SSE transport a restart cuts the
// event stream, a connection failure the gateway may learn of only from
// the call it has just sent, so one failed call is allowed there too.
func allowedFailures(env *harness.Env, transport fakebackends.Transport) int {
	if env.Capabilities().Has(targets.CapReinitOn404) && transport == fakebackends.TransportStreamableHTTP {
		return 0
	}
	return 1
}
