package scenarios

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// wrappingCallTimeout is the gateway's backend call timeout in the
// wrapping scenarios (the "timeout" fault waits it out three times).
const wrappingCallTimeout = 750 * time.Millisecond

// wrappingFault is one way for beta to fail.
type wrappingFault struct {
	name  string
	fault faults.Fault
	// httpOnly: the fault applies on a streamable-HTTP backend only
	// (truncate: on SSE the answer goes to the session stream).
	httpOnly bool
}

func wrappingFaults() []wrappingFault {
	return []wrappingFault{
		{"crash", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashEOF}}, false},
		{"403", faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403, Body: &faults.Body{Text: "Forbidden"}}}, false},
		{"reset", faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}, false},
		{"malformed", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedInvalidJSON}}, false},
		{"timeout", faults.Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}}, false},
		// The first 16 bytes of each answer, then the connection closes.
		{"truncate", faults.Fault{Kind: faults.KindTruncate, Params: &faults.Truncate{Size: 16}}, true},
		// A forged answer (another request's id) under an SSE event name
		// other than message, and on a resumed stream (issue 12 item 1):
		// mcp-go's client takes both as its answer; a gateway must not.
		{"forged-event", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedWrongIDEvent}}, false},
		{"forged-resumed", faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: faults.MalformedWrongIDResumed}}, false},
		// Answers that hold no answer (issue 12): 202 with no body, an empty
		// JSON body, an event stream that ends before the response, and a
		// response with neither result nor error. Each is a failure of
		// beta, never an empty success.
		{"no-answer-202", malformed(faults.MalformedAccepted), true},
		{"no-answer-empty-body", malformed(faults.MalformedEmptyBody), true},
		{"no-answer-stream-ends", malformed(faults.MalformedUnansweredSSE), true},
		{"no-result", malformed(faults.MalformedNoResult), false},
	}
}

// initializePathFaults are the faults of wrappingFaults that the
// initialize path is judged with (a stall is left out: the call timeout
// bounds calls, not a session's opening).
var initializePathFaults = []string{"crash", "403", "reset", "malformed"}

// runInitializePath: the initialize path, in steps of its own. Each fault
// is aimed at the requests that open beta's session (initialize,
// server/discover); a tools/call of beta follows, and, when it opened no
// session, the first call of a fresh client session (kit.OpeningCall). A
// gateway that opens a backend session for either call meets the fault
// there and must name beta within the bound; one that keeps beta's
// session open never meets it, and these checks are not applicable to it
// (beta's log shows no session opened for either call).
func runInitializePath(ctx context.Context, k *kit.Kit, c *history.Client, betaEcho string, bound time.Duration) {
	for _, f := range wrappingFaults() {
		if !slices.Contains(initializePathFaults, f.name) {
			continue
		}
		step := f.name + " on initialize"
		c = k.Steady(c, step)
		// Aimed at whichever request opens beta's session (initialize,
		// server/discover), on this client session's call or, for a
		// gateway that opens one per client session, a fresh one's.
		call, none := k.OpeningCall(c, beta, betaEcho, f.fault, echoArgs(step))
		k.CheckOnInitialize(step+": tools/call names beta", beta, call, none, func(ck *kit.C) {
			ck.Expect(call).To(matchers.BeBackendUnavailable(beta))
		})
		k.CheckOnInitialize(step+": tools/call fails within call timeout + 1 s", beta, call, none, func(ck *kit.C) {
			ck.FailsWithin(c, call, bound, "time_to_error_ms.initialize."+f.name)
		})
	}
}

func malformed(variant string) faults.Fault {
	return faults.Fault{Kind: faults.KindMalformed, Params: &faults.Malformed{Variant: variant}}
}

// forged reports whether a call returned a fake backend's forged answer.
func forged(call *history.Call) bool {
	return call.Outcome == history.OutcomeOK || strings.TrimSpace(call.Text()) == faults.ForgedText
}

// wrappingScenarios: scenario 1, per-backend error wrapping.
func wrappingScenarios() []Scenario {
	return variants("wrapping", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "a failing backend (crash, 403, reset, malformed, timeout, truncate, forged answers, answers without an answer) is named in tools/call, resources/read and prompts/get errors; " +
				"the other backend keeps working in the same session; the session survives every backend failing; a backend's own isError passes through",
			Labels:   []string{LabelWrapping},
			Timeout:  60 * time.Second,
			Topology: twoBackendsTopology(v, wrappingCallTimeout, wrappingCallTimeout+5*time.Second),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runWrapping(ctx, env, g, v) },
		}
	})
}

// wrappingRecovery bounds beta's recovery once a fault is cleared: it
// must answer the first call (no failed call) and within this.
const wrappingRecovery = time.Second

func runWrapping(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	defer k.WatchStalls()() // a call over its bound through a stall of the machine is no verdict (StalledOver)
	c := k.Client(v.Revision)
	session := c.SessionID()
	betaEcho, alphaEcho := k.Tool(beta, "echo"), k.Tool(alpha, "echo")
	k.CheckServes("beta answers before any fault", c, c.CallTool(ctx, betaEcho, echoArgs("before")))
	bound := wrappingCallTimeout + time.Second

	for _, f := range wrappingFaults() {
		if f.httpOnly && v.Transport != fakebackends.TransportStreamableHTTP {
			continue
		}
		// Each of beta's methods in a fault window of its own, from steady
		// state, the fault aimed at that method: the first call of a window
		// is the one that reaches beta (a gateway may drop a backend's
		// session, or the backend, after one failure). The naming check is
		// judged on any failed call addressed to beta's name (a gateway
		// that fails it without naming beta, having dropped beta, has a
		// naming defect); the bound only on a call the fault acted on.
		var faulted []*history.Call
		var unsent []string // why the fault's forged answer was not sent, per call
		stateless := false  // a stateless backend session: nothing resumed
		for i, m := range []struct {
			method string
			call   func() *history.Call
		}{
			{"tools/call", func() *history.Call { return c.CallTool(ctx, betaEcho, echoArgs(f.name)) }},
			{"resources/read", func() *history.Call { return c.ReadResource(ctx, k.Resource(beta, readme(beta))) }},
			{"prompts/get", func() *history.Call { return c.GetPrompt(ctx, k.Prompt(beta, "greet"), nil) }},
		} {
			names, within := f.name+": "+m.method+" names beta", f.name+": "+m.method+" fails within call timeout + 1 s"
			if why := k.NotOffered(c, m.method); why != "" {
				k.NotApplicable(names, why)
				k.NotApplicable(within, why)
				continue
			}
			c = k.Steady(c, f.name+" on "+m.method)
			fault := f.fault
			fault.Match = faults.Match{Method: m.method}
			k.SetFaults(beta, fault)
			call := m.call()
			// A method the gateway turns out not to offer (-32601) makes
			// both checks not applicable (the kit decides, from the call).
			k.CheckCall(names, call, matchers.BeBackendUnavailable(beta))
			figure := "time_to_error_ms." + strings.ReplaceAll(m.method, "/", "_") + "." + f.name
			acted := k.FaultActed(beta, call)
			k.CheckPremise(within, acted, call, func(ck *kit.C) { ck.FailsWithin(c, call, bound, figure) })
			// A forged answer sent on a resumed stream only reaches a
			// gateway that resumed it (on streamable HTTP; an SSE backend
			// sends it on its session stream at once).
			if mf, ok := f.fault.Params.(*faults.Malformed); ok && acted == "" && mf.Variant == faults.MalformedWrongIDResumed && v.Transport == fakebackends.TransportStreamableHTTP {
				if rec, arrived, _ := k.Arrival(beta, call); arrived && rec.Protocol == string(fakebackends.ProtocolModern) {
					// A stateless backend session resumes nothing: there is
					// no forged answer to reject.
					acted, stateless = "the gateway's session with beta is stateless (2026-07-28, beta's log): no stream is resumed, so the forged answer on a resumed stream is never sent", true
				} else {
					acted = k.Resumed(beta, call)
				}
			}
			if acted == "" {
				faulted = append(faulted, call)
			} else {
				unsent = append(unsent, acted)
			}
			if i == 0 {
				// The other backend works in the same session, on every
				// method the gateway offers, while beta fails.
				calls := []*history.Call{c.CallTool(ctx, alphaEcho, echoArgs(f.name))}
				if k.NotOffered(c, "resources/read") == "" {
					calls = append(calls, c.ReadResource(ctx, k.Resource(alpha, readme(alpha))))
				}
				if k.NotOffered(c, "prompts/get") == "" {
					calls = append(calls, c.GetPrompt(ctx, k.Prompt(alpha, "greet"), nil))
				}
				k.CheckBystander(f.name+": alpha unaffected (tools, resources, prompts)", calls, func(ck *kit.C) {
					for _, call := range calls {
						if call.NotOffered == "" { // judged on what the gateway offers
							ck.Expect(call).To(matchers.HaveOutcome(history.OutcomeOK), "alpha while beta fails with %s", f.name)
						}
					}
				})
			}
			k.ClearFaults(beta)
			recovered := f.name + ": beta answers once cleared"
			if i > 0 {
				recovered += " (after " + m.method + ")"
			}
			k.CheckRecovery(recovered, c, beta, wrappingRecovery, 0, f.name+"."+m.method)
		}

		if strings.HasPrefix(f.name, "forged") {
			name := f.name + ": the forged answer never reaches the client"
			if len(faulted) == 0 {
				why := "no call reached beta with the fault applied: the forged answer was never sent"
				if len(unsent) > 0 {
					why = strings.Join(slices.Compact(unsent), "; ")
				}
				if stateless {
					k.NotApplicable(name, why)
				} else {
					k.Inconclusive(name, why)
				}
			} else {
				k.Check(name, func(ck *kit.C) {
					ck.Evidence(faulted...)
					ck.Expected("no call that beta answered with its forged answer (id %d, text %q) returns it", faults.ForgedID, faults.ForgedText)
					for _, c := range faulted {
						ck.Expect(forged(c)).To(gomega.BeFalse(), "%s %s returned the forged answer: %q", c.Method, c.Target, c.Text())
					}
				})
			}
		}
	}

	runInitializePath(ctx, k, c, betaEcho, bound)

	// Every backend failing at once: each error names its own backend, and
	// the session lives on.
	c = k.Steady(c, "all down")
	allDownSession := c.SessionID() // the session every backend fails under
	reset := faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}
	k.SetFaults(alpha, reset)
	k.SetFaults(beta, reset)
	for _, b := range []string{alpha, beta} {
		call := c.CallTool(ctx, k.Tool(b, "echo"), echoArgs("all down"))
		k.CheckCallWithin("all down: "+b+"'s error names "+b+" within 1 s", c, call, time.Second, "time_to_error_ms.all_down."+b,
			matchers.BeBackendUnavailable(b))
	}
	k.ClearFaults(alpha)
	k.ClearFaults(beta)
	for _, b := range []string{alpha, beta} {
		k.CheckRecovery("all back: "+b+" answers once every backend is cleared", c, b, wrappingRecovery, 0, "all_down."+b)
	}
	if allDownSession != session && session != "" {
		// The kit went on with a fresh session after this one did not
		// recover from an earlier fault: that defect is judged there, once.
		k.Inconclusive("the session survives every backend failing", "the first session was replaced after it did not recover from an earlier fault (the failed check \"the session recovers from ...\")")
	} else if !c.Stateless() {
		// A legacy session has an id, and it is the same one: the gateway
		// did not end the session, and the session still serves both
		// backends. (Its id alone cannot fail: the client keeps the id it
		// was given, whatever became of the session. The modern revision is
		// stateless: no id; the same client calling on is what survives.)
		k.Check("the session survives every backend failing", func(ck *kit.C) {
			ck.Expected("the same legacy session id %q serves alpha and beta once every backend is back", session)
			ck.Expect(session).NotTo(gomega.BeEmpty(), "the legacy client has a session id")
			ck.Expect(c.SessionID()).To(gomega.Equal(session), "the client session survived")
			for _, b := range []string{alpha, beta} {
				call := c.CallTool(ctx, k.Tool(b, "echo"), echoArgs("same session"))
				ck.Evidence(call)
				ck.Expect(call).To(matchers.HaveOutcome(history.OutcomeOK), "%s through the session that saw every backend fail", b)
			}
		})
	}
	k.Check("tools/list lists both backends after every backend failed", func(ck *kit.C) {
		names, err := c.ToolNames(ctx)
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "tools/list")
		ck.Expect(names).To(gomega.ContainElements(alphaEcho, betaEcho))
	})

	// A backend's own isError result passes through untouched: not
	// reported as the backend being unavailable, text unchanged. (The text
	// does not name beta: an isError naming the backend is exactly what a
	// gateway's wrapped error looks like, see BeBackendUnavailable.)
	const own = "the tool's own error: quota exceeded"
	c = k.Steady(c, "beta's own isError")
	k.SetFaults(beta, faults.Fault{Kind: faults.KindToolError, Params: &faults.ToolError{Text: own}})
	k.Check("beta's own isError passes through unchanged", func(ck *kit.C) {
		call := c.CallTool(ctx, betaEcho, echoArgs("own error"))
		ck.Expect(call.Outcome).To(gomega.Equal(history.OutcomeToolError), "a backend's own isError: %s", call.Text())
		ck.Expect(call.IsError).To(gomega.BeTrue(), "isError kept")
		ck.Expect(call.Text()).To(gomega.Equal(own), "the backend's text passes through unchanged")
		ck.Expect(call.Meta).NotTo(gomega.HaveKey(history.MetaErrorKind), "no gateway error _meta on the backend's own result")
		ck.Expect(call).NotTo(matchers.BeBackendUnavailable(beta))
	})
	k.ClearFaults(beta)
	k.CheckRecovery("beta answers at the end", c, beta, wrappingRecovery, 0, "own_error")
}
