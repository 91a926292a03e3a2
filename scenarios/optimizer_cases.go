package scenarios

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// optRetry is how long the optimizer scenario waits between two new
// sessions when it waits for a state by behaviour (no health API).
const optRetry = 100 * time.Millisecond

// optRun is one run of the optimizer scenario. With the health API
// (health) it waits for beta's circuit to open, for beta's recovery and for
// every backend to be unhealthy by reading it, and judges what it reads;
// without, by what a client sees, and the health API's checks are not
// applicable.
type optRun struct {
	k      *kit.Kit
	v      Variant
	health bool

	warm                *history.Client
	betaEcho, alphaEcho string
	// lastOpen is when newSessionUntil's last session open began.
	lastOpen time.Time
}

// healthNA records a health-API check not applicable (the target has no
// health API).
func (o *optRun) healthNA(name string) { o.k.NotApplicable(name, o.k.Lacks(targets.CapHealthAPI)) }

// rejected makes one call of beta's echo through the warm session and
// reports whether it failed without reaching beta (beta's request log),
// with the call.
func (o *optRun) rejected(why string) (bool, *history.Call, string) {
	before, err1 := o.k.CountRequests(beta, "tools/call")
	call := callTool(o.k.Ctx, o.warm, o.betaEcho, echoArgs(why))
	after, err2 := o.k.CountRequests(beta, "tools/call")
	if err1 != nil || err2 != nil {
		return false, call, fmt.Sprintf("beta's request log: %v %v", err1, err2)
	}
	seen := fmt.Sprintf("call_tool %s: %s in %s, %d tools/call reached beta", o.betaEcho, call.Outcome, call.Took(), after-before)
	return call.Outcome != history.OutcomeOK && after == before, call, seen
}

// openBeta fails calls of beta's echo through the warm session until
// beta's circuit opens, and judges it: with the health API by its circuit
// state, and always by behaviour (a call of beta's echo then fails without
// reaching beta; without the health API that is what it waits for). It
// reports whether the circuit opened: the cases need it.
func (o *optRun) openBeta() bool {
	ctx, k := o.k.Ctx, o.k
	// The breaker is fed only by calls that reach beta: a call_tool by a
	// name the gateway does not know (guessed from the toolNames pattern)
	// feeds nothing, and every check that follows is inconclusive.
	first := callTool(ctx, o.warm, o.betaEcho, echoArgs("fail"))
	if why := k.FaultActed(beta, first); why != "" {
		hint := ""
		if !k.Names().Found(beta, "echo") {
			hint = fmt.Sprintf(" (%q is guessed from the toolNames pattern: find_tool showed no origin marker for beta's echo; set toolNames in the profile)", o.betaEcho)
		}
		k.Assume("call_tool of beta's echo never reached beta, so its breaker was never fed: " + why + hint)
		k.Check(optHealthOpen, func(*kit.C) {})
		return false
	}
	if o.health {
		opened := k.Check(optHealthOpen, func(ck *kit.C) {
			ok := kit.Until(ctx, 5*time.Second, func() bool {
				if healthOf(ctx, o.k.Env, beta).Breaker == "open" {
					return true
				}
				callTool(ctx, o.warm, o.betaEcho, echoArgs("fail"))
				return healthOf(ctx, o.k.Env, beta).Breaker == "open"
			})
			h := healthOf(ctx, o.k.Env, beta)
			ck.Expect(ok).To(gomega.BeTrue(), "beta's circuit opens after failed calls (status %q, circuit %q)", h.State, h.Breaker)
		})
		if !opened {
			return false
		}
	} else {
		o.healthNA(optHealthOpen)
	}
	return k.Check("beta's circuit opens: a call of beta's echo then fails without reaching beta", func(ck *kit.C) {
		var ok bool
		var call *history.Call
		var seen string
		if o.health { // open by the health API: the next call must not reach beta
			ok, call, seen = o.rejected("fail")
		} else {
			ok = kit.Until(ctx, 5*time.Second, func() bool { ok, call, seen = o.rejected("fail"); return ok })
		}
		ck.Evidence(call)
		ck.Observed("%s", seen)
		ck.Expect(ok).To(gomega.BeTrue(), "after failed calls beta's circuit opens: a call of its echo fails without reaching beta")
	})
}

// stillOpen asserts that beta's circuit was still open when the case-1
// session was created (else case 1 would judge a session created with
// beta in it): by the health API, or else by a call of beta's echo after
// the session was created still failing without reaching beta (a closed or
// half-open circuit lets it through).
func (o *optRun) stillOpen() {
	if o.health {
		o.k.G.Expect(healthOf(o.k.Ctx, o.k.Env, beta).Breaker).To(gomega.Equal("open"), "beta's circuit was still open when the session was created")
		return
	}
	ok, _, seen := o.rejected("still open")
	o.k.G.Expect(ok).To(gomega.BeTrue(), "beta's circuit was still open when the session was created (%s)", seen)
}

// alphaOut reports why the gateway had alpha out of new sessions' views
// at the moment when names ("" when it did not, as far as can be seen):
// its health API showed alpha unhealthy or alpha's circuit open or
// half-open (its probes time out on a loaded machine). The checks that
// presume alpha in a view are then inconclusive instead of failing the
// gateway for leaving out a backend it saw failing. Only the health API
// is asked: a call through the gateway would hide the defects those
// checks exist to find (a call_tool that never routes to alpha).
func (o *optRun) alphaOut(when string) string {
	if !o.health {
		return ""
	}
	h := healthOf(o.k.Ctx, o.k.Env, alpha)
	if h.State != "unhealthy" && h.Breaker != "open" && h.Breaker != "half-open" {
		return ""
	}
	return fmt.Sprintf("the gateway had alpha out %s (its health API showed alpha %s, its circuit %s)", when, h.State, h.Breaker)
}

// noHealthAPI says, on a target without a health API, why alpha missing
// from the view is no verdict: nothing tells a health decision (alpha's
// probes time out on a loaded machine) from a defect. It is "" on a target
// with one (alphaOut says). Callers use it only when alpha is wholly out
// of what find_tool shows.
func (o *optRun) noHealthAPI(when string) string {
	if o.health {
		return ""
	}
	return "alpha was out of the gateway's view " + when + ", and the target has no health API to say whether its health checks had put alpha out"
}

// sawAlpha reports whether res shows any tool of alpha.
func (o *optRun) sawAlpha(res findResult) bool {
	for _, n := range res.names() {
		if n == o.alphaEcho || n == o.k.Tool(alpha, "slow") {
			return true
		}
	}
	return false
}

// case2 judges that healthy backends are unaffected: alpha's echo is
// found first in c1, and called.
//
// Alpha may go out after the session was created (its probes time out on
// a loaded machine): when alpha is not found first, or its call fails,
// and the health API then shows alpha out, the check is inconclusive.
func (o *optRun) case2(c1 *history.Client) {
	ctx, k := o.k.Ctx, o.k
	const found, called = "case 2: alpha's echo is found first, with token metrics", "case 2: call_tool calls alpha's echo"
	res, call, err := tryFind(ctx, c1, "echo the arguments of alpha", "alpha")
	// Without a health API only alpha wholly out of the view (find_tool
	// answered, with no tool of alpha) is no verdict; alpha shown but not
	// first is judged.
	alphaGone := o.health || (err == nil && !o.sawAlpha(res))
	out := ""
	if alphaGone && (err != nil || len(res.names()) == 0 || res.names()[0] != o.alphaEcho) {
		out = cmp.Or(o.alphaOut("as case 2 looked for alpha's echo"), o.noHealthAPI("as case 2 looked for alpha's echo"))
	}
	if out != "" {
		k.Inconclusive(found, out, call)
	} else {
		k.Check(found, func(ck *kit.C) {
			ck.Evidence(call)
			expectFound(k, ck, "echo the arguments of alpha", call, err)
			ck.Expect(res.names()).NotTo(gomega.BeEmpty(), "find_tool for alpha's echo")
			ck.Expect(res.names()[0]).To(gomega.Equal(o.alphaEcho), "alpha's echo ranks first (%v)", res.names())
			ck.Expect(res.TokenMetrics.BaselineTokens).To(gomega.BeNumerically(">", 0), "token_metrics.baseline_tokens")
			k.Figure("savings_percent", res.TokenMetrics.SavingsPercent)
		})
	}
	echo := callTool(ctx, c1, o.alphaEcho, echoArgs("via call_tool"))
	if echo.Outcome != history.OutcomeOK && alphaGone {
		if why := cmp.Or(o.alphaOut("as case 2 called alpha's echo"), o.noHealthAPI("as case 2 called alpha's echo")); why != "" {
			k.Inconclusive(called, why, echo)
			return
		}
	}
	if echo.Outcome != history.OutcomeOK && !o.health {
		if why, retry := o.alphaRefusedUnderLoad(c1, echo); why != "" {
			k.Inconclusive(called, why, echo, retry)
			return
		}
	}
	k.CheckOK(called, echo)
}

// Without a health API, alpha's call refused under load: the gateway's own
// health probes of alpha time out when the machine stalls (200 ms, twice
// in a row, open alpha's circuit for 2 s), and nothing but the health API
// could say so. The refusal is a health decision, not a routing defect,
// when all of these hold:
//   - the call never reached alpha (alpha's log), which has no fault;
//   - this process stalled at least refusedStall in the refusedWindow
//     before the call (the probes' timeouts and the open circuit's span);
//   - the gateway took alpha back: the same call succeeds on the same
//     session within refusedRetry.
//
// A gateway that never routes to alpha fails all the same, loaded or not.
const (
	refusedStall  = optHealthTimeout / 2
	refusedWindow = 2*optHealthInterval + optHealthTimeout + optOpenTimeout
	refusedRetry  = optOpenTimeout + 3*time.Second
)

// alphaRefusedUnderLoad returns why echo's failure is no verdict ("" when
// it is one), and the retry that succeeded.
func (o *optRun) alphaRefusedUnderLoad(c1 *history.Client, echo *history.Call) (string, *history.Call) {
	k := o.k
	if _, reached, err := k.Arrival(alpha, echo); err != nil || reached {
		return "", nil
	}
	stalled := k.StalledAround(echo, refusedWindow)
	if stalled < refusedStall {
		return "", nil
	}
	var retry *history.Call
	if !kit.Until(k.Ctx, refusedRetry, func() bool {
		retry = callTool(k.Ctx, c1, o.alphaEcho, echoArgs("via call_tool, again"))
		if retry.Outcome == history.OutcomeOK {
			return true
		}
		kit.Sleep(k.Ctx, optRetry)
		return false
	}) {
		return "", nil
	}
	return fmt.Sprintf("alpha's echo was refused without reaching alpha (%s %q), while this machine stalled %s in the %s before: "+
		"the gateway's health probes of alpha time out then, and it took alpha back %s later; the target has no health API to say whether its health checks had put alpha out",
		echo.Outcome, kit.Excerpt(echo.Text(), 120), stalled.Round(time.Millisecond), refusedWindow, (retry.Start.D() - echo.Start.D()).Round(time.Millisecond)), retry
}

// tryFind calls find_tool and decodes its answer without judging it: err
// says why it is no answer (not OK, not JSON).
func tryFind(ctx context.Context, c *history.Client, description string, keywords ...string) (findResult, *history.Call, error) {
	args := map[string]any{"tool_description": description}
	if len(keywords) > 0 {
		args["tool_keywords"] = keywords
	}
	call := c.CallTool(ctx, "find_tool", args)
	var res findResult
	if call.Outcome != history.OutcomeOK {
		return res, call, fmt.Errorf("find_tool %q: %s: %s", description, call.Outcome, call.Text())
	}
	if err := json.Unmarshal([]byte(call.Text()), &res); err != nil {
		return res, call, fmt.Errorf("find_tool's result is not JSON: %s", call.Text())
	}
	return res, call, nil
}

// newSessionUntil opens a new session (named name) every optRetry until
// ok holds for one, for at most d, and returns the last session (nil when
// none opened: err), how long opening it took and whether ok held. The
// sessions before the last are closed.
func (o *optRun) newSessionUntil(name string, d time.Duration, ok func(c *history.Client) bool) (c *history.Client, took time.Duration, held bool, err error) {
	held = kit.Until(o.k.Ctx, d, func() bool {
		if c != nil {
			_ = c.Close(o.k.Ctx)
		}
		o.lastOpen = time.Now()
		c, err = o.k.Env.Client(o.k.Ctx, o.v.Revision, history.WithClientName(name))
		took = time.Since(o.lastOpen)
		if err == nil && ok(c) {
			return true
		}
		kit.Sleep(o.k.Ctx, optRetry)
		return false
	})
	return c, took, held, err
}

// case3: beta recovers (the circuit closes); a new session finds and calls
// its tools; the old session c1 still does not (its view is fixed). It
// returns the new session, or nil when beta never came back.
func (o *optRun) case3(c1 *history.Client, alphaOut string) *history.Client {
	ctx, k := o.k.Ctx, o.k
	const findFirst = "case 3: a new session finds beta's echo first after recovery"
	k.ClearFaults(beta)
	recovered := time.Now()
	var c2 *history.Client
	if o.health {
		back := k.Check(optHealthRecovered, func(ck *kit.C) {
			ok := kit.Until(ctx, optOpenTimeout+5*time.Second, func() bool {
				h := healthOf(ctx, o.k.Env, beta)
				return h.Breaker == "closed" && h.State == "healthy"
			})
			h := healthOf(ctx, o.k.Env, beta)
			ck.Expect(ok).To(gomega.BeTrue(), "beta healthy with its circuit closed again (status %q, circuit %q)", h.State, h.Breaker)
		})
		if !back {
			return nil
		}
		k.Figure("recovery_ms", ms(time.Since(recovered)))
		c2 = k.Client(o.v.Revision, history.WithClientName("after"))
		k.Check(findFirst, func(ck *kit.C) {
			res := findTool(k, ck, c2, "echo the arguments of beta", "beta")
			ck.Expect(res.names()).NotTo(gomega.BeEmpty(), "find_tool for beta's echo after recovery")
			ck.Expect(res.names()[0]).To(gomega.Equal(o.betaEcho), "beta's echo ranks first after recovery (%v)", res.names())
		})
	} else {
		// Recovered when a new session finds beta's echo first.
		o.healthNA(optHealthRecovered)
		back := k.Check(findFirst, func(ck *kit.C) {
			var res findResult
			var call *history.Call
			var ferr, cerr error
			var found bool
			c2, _, found, cerr = o.newSessionUntil("after", optOpenTimeout+5*time.Second, func(c *history.Client) bool {
				res, call, ferr = tryFind(ctx, c, "echo the arguments of beta", "beta")
				return ferr == nil && len(res.Tools) > 0 && res.Tools[0].Name == o.betaEcho
			})
			ck.Evidence(call)
			ck.Expect(cerr).NotTo(gomega.HaveOccurred(), "a new session opens after beta's recovery")
			ck.Expect(found).To(gomega.BeTrue(), "a new session finds beta's echo first within %s of beta's recovery (last: %v, %v)",
				optOpenTimeout+5*time.Second, res.names(), ferr)
			ck.ReturnsWithin(c2, call, time.Second, "find_tool_ms")
		})
		if !back || c2 == nil {
			return nil
		}
		k.Figure("recovery_ms", ms(time.Since(recovered)))
	}
	k.CheckOK("case 3: call_tool calls beta's echo after recovery", callTool(ctx, c2, o.betaEcho, echoArgs("recovered")))
	if !c1.Stateless() { // by the revision the gateway agreed, not the one asked for
		// Alpha must have been in the view since the session was created.
		checkNoBeta(k, c1, "case 3: the session created while beta was out, after beta recovered",
			cmp.Or(alphaOut, o.alphaOut("after beta recovered"), o.noHealthAPI("after beta recovered")))
	} else {
		// No session to hold a view: the same stateless client's next
		// request is judged now, and finds beta again.
		k.Check("case 3: a stateless client's request after recovery finds beta", func(ck *kit.C) {
			res := findTool(k, ck, c1, "echo the arguments of beta", "beta")
			ck.Expect(res.names()).To(gomega.ContainElement(o.betaEcho), "a stateless client's request after recovery finds beta (%v)", res.names())
		})
	}
	return c2
}

// case4: no crash or hang, with a backend dying during call_tool and with
// every backend unhealthy; c2 is a session created while both were
// healthy.
func (o *optRun) case4(c2 *history.Client) {
	ctx, k, rec := o.k.Ctx, o.k, o.k.Recorder()
	// The older session's call of alpha's echo, once alpha is down, must
	// name alpha only if alpha is in that session's view: find_tool shows
	// it, before any fault (alpha's probes time out on a loaded machine,
	// and a session created then has alpha out of its view for good).
	var alphaInView *history.Call
	alphaMissing := ""
	if !c2.Stateless() {
		res, call, err := tryFind(ctx, c2, "echo the arguments of alpha", "alpha")
		if alphaInView = call; err == nil && !o.sawAlpha(res) {
			alphaMissing = fmt.Sprintf("alpha was not in the older session's view: find_tool there found no tool of alpha before alpha went down (%v)", res.names())
			if out := o.alphaOut("then"); out != "" {
				alphaMissing += "; " + out
			}
		}
	}
	k.SetFaults(beta, onCall(faults.Fault{Kind: faults.KindCrash, Params: &faults.Crash{Mode: faults.CrashReset}}))
	k.CheckCallWithin("case 4: call_tool while beta dies fails naming beta within 1 s", c2, callTool(ctx, c2, o.betaEcho, echoArgs("dying")),
		time.Second, "time_to_error_ms.call_tool_dying", matchers.BeBackendUnavailable(beta))
	// ... and every backend unhealthy.
	all500 := faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 500}}
	k.SetFaults(alpha, all500)
	k.SetFaults(beta, all500)
	var c3 *history.Client
	var err error
	var took time.Duration
	if o.health {
		down := k.Check(optHealthAllDown, func(ck *kit.C) {
			ok := kit.Until(ctx, 5*time.Second, func() bool {
				return healthOf(ctx, o.k.Env, alpha).State == "unhealthy" && healthOf(ctx, o.k.Env, beta).State == "unhealthy"
			})
			ck.Expect(ok).To(gomega.BeTrue(), "both backends unhealthy (alpha %q, beta %q)", healthOf(ctx, o.k.Env, alpha).State, healthOf(ctx, o.k.Env, beta).State)
		})
		if !down {
			return
		}
		o.lastOpen = time.Now()
		c3, err = o.k.Env.Client(ctx, o.v.Revision, history.WithClientName("all-down"))
		took = time.Since(o.lastOpen)
	} else {
		// Every backend is out for the gateway when a new session's
		// find_tool finds nothing; the checks below judge that session.
		o.healthNA(optHealthAllDown)
		c3, took, _, err = o.newSessionUntil("all-down", 5*time.Second, func(c *history.Client) bool {
			res, _, ferr := tryFind(ctx, c, "echo the arguments of alpha", "alpha")
			return ferr == nil && len(res.Tools) == 0
		})
	}
	rec.SetFigure("connect_all_down_ms", ms(took))
	k.Check("case 4: a session opens within 2 s with every backend unhealthy", func(ck *kit.C) {
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "a session opens with every backend unhealthy")
		ck.TookWithin(o.warm, "connecting with every backend unhealthy", o.lastOpen, took, 2*time.Second)
	})
	if err == nil {
		k.Check("case 4: with every backend unhealthy find_tool finds nothing and says no backend", func(ck *kit.C) {
			names, err := c3.ToolNames(ctx)
			ck.Expect(err).NotTo(gomega.HaveOccurred(), "tools/list with every backend unhealthy")
			ck.Expect(names).To(gomega.ConsistOf("find_tool", "call_tool"))
			empty := findTool(k, ck, c3, "echo the arguments of alpha", "alpha")
			ck.Expect(empty.Tools).To(gomega.BeEmpty(), "find_tool with every backend unhealthy")
			ck.Expect(strings.ToLower(empty.Message)).To(gomega.ContainSubstring("no backend"), "find_tool says no backend is available")
		})
		k.CheckCallWithin("case 4: call_tool with every backend unhealthy fails within 1 s", c3, callTool(ctx, c3, o.alphaEcho, echoArgs("x")),
			time.Second, "time_to_error_ms.call_tool_all_down", gomega.Not(matchers.HaveOutcome(history.OutcomeOK)))
	}
	// The earlier session still answers, with errors naming the backend
	// (a stateless client's request is judged now: alpha is out of it).
	old := callTool(ctx, c2, o.alphaEcho, echoArgs("x"))
	if !c2.Stateless() {
		const name = "case 4: call_tool in an older session with alpha down names alpha within 1 s"
		if alphaMissing != "" {
			k.Inconclusive(name, alphaMissing, alphaInView, old)
		} else {
			k.CheckCallWithin(name, c2, old, time.Second, "", matchers.BeBackendUnavailable(alpha))
		}
	} else {
		k.CheckCallWithin("case 4: call_tool from a stateless client with alpha down fails within 1 s", c2, old, time.Second, "",
			gomega.Not(matchers.HaveOutcome(history.OutcomeOK)))
	}
	k.Check("case 4: find_tool still answers in the older session", func(ck *kit.C) { findTool(k, ck, c2, "echo") })

	k.ClearFaults(alpha)
	k.ClearFaults(beta)
}
