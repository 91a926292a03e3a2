package kit

import (
	"cmp"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// C is what a check's body asserts with: a Gomega whose failed assertion
// ends the body (not the scenario) and fails the check, plus the check's
// evidence.
type C struct {
	gomega.Gomega
	k        *Kit
	calls    []*history.Call
	expected string
	observed string
	// excuse, when set, says why a failure of the body says nothing of
	// the gateway (Excuse): the check is then inconclusive.
	excuse string
}

// Excuse records why a failure of the rest of the body would say nothing
// of the gateway (the machine kept it from running in time: Starved):
// should the body fail, the check is inconclusive with this reason and
// the failure, never failed; a body that passes passes. "" withdraws it.
func (c *C) Excuse(format string, args ...any) { c.excuse = fmt.Sprintf(format, args...) }

// Evidence adds calls (made before the check, or concurrently) to the
// check's evidence. Calls recorded while the body runs are evidence
// anyway.
func (c *C) Evidence(calls ...*history.Call) {
	for _, call := range calls {
		if call != nil {
			c.calls = append(c.calls, call)
		}
	}
}

// Expected says what the check expects, in words (default: its name).
func (c *C) Expected(format string, args ...any) { c.expected = fmt.Sprintf(format, args...) }

// Observed says what the check saw (default: its evidence calls, or the
// failed assertion's message).
func (c *C) Observed(format string, args ...any) { c.observed = fmt.Sprintf(format, args...) }

// checkFailure is what a check's fail handler panics with.
type checkFailure struct{ msg string }

// Check judges one named check: body asserts with c; the first failed
// assertion ends the body and records the check failed, with the message
// as what was observed, and the scenario goes on. The check's evidence is
// every call recorded while body ran plus c.Evidence; Took is the one
// evidence call's duration, or else how long body ran. It reports whether
// the check passed. While the gateway is not in steady state (see Steady,
// CheckRecovery, Assume), or under a premise not shown (Given), the check
// is recorded inconclusive, with the reason, and body does not run.
func (k *Kit) Check(name string, body func(c *C)) bool {
	if why := cmp.Or(k.Unsteady(), k.premise); why != "" {
		k.Inconclusive(name, why)
		return false
	}
	c := &C{k: k}
	c.Gomega = gomega.NewGomega(func(message string, _ ...int) {
		if where := scenarioLine(); where != "" {
			message = where + ": " + message
		}
		panic(checkFailure{msg: message})
	})
	rec := k.Recorder()
	seq0 := rec.Seq()
	start := time.Now()
	failMsg, failed := runCheck(c, body)
	took := time.Since(start)

	evidence := map[int]history.CallRecord{}
	var order []int
	for _, e := range rec.CallsBetween(seq0, rec.Seq()) {
		evidence[e.Seq] = *e.Call
		order = append(order, e.Seq)
	}
	for _, call := range c.calls {
		if _, ok := evidence[call.Seq]; !ok {
			evidence[call.Seq] = call.CallRecord
			order = append(order, call.Seq)
		}
	}
	ch := history.Check{Name: name, Verdict: history.CheckPassed, Expected: cmp.Or(c.expected, name), Observed: c.observed, Took: history.Millis(took), Calls: order}
	if len(order) == 1 {
		ch.Took = evidence[order[0]].Duration
	}
	var records []history.CallRecord
	for _, seq := range order {
		records = append(records, evidence[seq])
	}
	k.stamp(&ch, records...)
	if why := k.budgetOut(); failed && why != "" {
		// The scenario's time ran out under the check: its calls ended
		// on the harness's context, not on the gateway.
		k.Inconclusive(name, why, c.calls...)
		return false
	}
	if failed && c.excuse != "" {
		ch.Verdict, ch.Reason = history.CheckInconclusive, c.excuse
		ch.Observed = Excerpt(strings.TrimSpace(failMsg), 1500)
		if c.observed != "" {
			ch.Observed = c.observed + ": " + ch.Observed
		}
		rec.AddCheck(ch)
		return false
	}
	if why := k.notApplicable(records); failed && why != "" {
		ch.Verdict, ch.Reason, ch.Observed = history.CheckNotApplicable, why, Excerpt(strings.TrimSpace(failMsg), 600)
		rec.AddCheck(ch)
		return false
	}
	if failed {
		ch.Verdict = history.CheckFailed
		ch.Property = propertyShown(ch.Property, records)
		if ch.Property == history.PropNamesBackend && k.answeredItself(records) {
			ch.Property = history.PropUnhealthyNamed
		}
		ch.Observed = Excerpt(strings.TrimSpace(failMsg), 1500)
		if c.observed != "" {
			ch.Observed = c.observed + ": " + ch.Observed
		}
	} else if ch.Observed == "" {
		var parts []string
		for _, seq := range order {
			parts = append(parts, describe(evidence[seq]))
		}
		ch.Observed = Excerpt(strings.Join(parts, "; "), 600)
	}
	rec.AddCheck(ch)
	return !failed
}

// scenarioLine is "file.go:12" of the innermost caller outside Gomega
// and this kit: the scenario's line that judged the check.
func scenarioLine() string {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if !strings.Contains(f.File, "/onsi/gomega") && !strings.Contains(f.File, "/scenarios/kit/") && !strings.HasPrefix(f.Function, "runtime.") {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

// runCheck runs body, recovering a failed assertion of the check (any
// other panic, e.g. the scenario's own Gomega failing, goes on up).
func runCheck(c *C, body func(c *C)) (msg string, failed bool) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(checkFailure)
			if !ok {
				panic(r)
			}
			msg, failed = f.msg, true
		}
	}()
	body(c)
	return "", false
}

// CheckCall judges a check on one call: it must satisfy every matcher
// (e.g. matchers.BeBackendUnavailable(beta)); a time bound goes through
// CheckCallWithin, C.FailsWithin or C.ReturnsWithin instead.
func (k *Kit) CheckCall(name string, call *history.Call, ms ...types.GomegaMatcher) bool {
	return k.Check(name, func(c *C) {
		c.Evidence(call)
		for _, m := range ms {
			c.Expect(call).To(m)
		}
	})
}

// CheckOK judges a check that call succeeded.
func (k *Kit) CheckOK(name string, call *history.Call) bool {
	return k.Check(name, func(c *C) { ExpectOK(c, call) })
}

// ExpectOK asserts with c, with call as evidence, that call succeeded.
func ExpectOK(c *C, call *history.Call) {
	c.Evidence(call)
	c.Expect(call.Outcome).To(gomega.Equal(history.OutcomeOK), "%s %s ended %s after %s: %s", call.Method, call.Target, call.Outcome, call.Took(), call.Text())
}

// CheckFailed judges a check that call failed: an error or an isError
// result, not a success and not the client's own deadline (the gateway
// answered).
func (k *Kit) CheckFailed(name string, call *history.Call, ms ...types.GomegaMatcher) bool {
	return k.Check(name, func(c *C) {
		c.Evidence(call)
		ExpectFailed(c, call)
		for _, m := range ms {
			c.Expect(call).To(m)
		}
	})
}

// ExpectFailed asserts with g that call failed: an error or an isError
// result, not a success and not the client's own deadline (the gateway
// answered).
func ExpectFailed(g gomega.Gomega, call *history.Call) {
	g.ExpectWithOffset(1, call.Outcome).To(gomega.BeElementOf(history.OutcomeBackendUnavailable, history.OutcomeError, history.OutcomeToolError),
		"%s %s ended %s after %s: %s", call.Method, call.Target, call.Outcome, call.Took(), call.Text())
}

// Lacks returns why the target cannot be judged on a check needing caps
// ("target X lacks capability metrics"), or "" when it has them all.
func (k *Kit) Lacks(caps ...targets.Capability) string {
	missing := k.Env.Capabilities().Missing(caps...)
	if len(missing) == 0 {
		return ""
	}
	return (&targets.MissingCapabilityError{Target: k.Env.Target().Name(), Missing: missing}).Error()
}

// CheckIf judges the check when the target has every capability of needs,
// and records it not_applicable, with the missing capability as the
// reason, when it does not. It reports whether the check was judged and
// passed.
func (k *Kit) CheckIf(needs []targets.Capability, name string, body func(c *C)) bool {
	if reason := k.Lacks(needs...); reason != "" {
		k.NotApplicable(name, reason)
		return false
	}
	return k.Check(name, body)
}

// NotApplicable records a check not judged, and why.
func (k *Kit) NotApplicable(name, reason string) {
	ch := history.Check{Name: name, Verdict: history.CheckNotApplicable, Reason: reason}
	k.stamp(&ch)
	k.Recorder().AddCheck(ch)
}

// describe is one call as evidence: method, target, outcome, duration
// and an excerpt of its text.
func describe(c history.CallRecord) string {
	s := fmt.Sprintf("%s %s: %s in %s", c.Method, c.Target, c.Outcome, c.Duration.D().Round(10*time.Microsecond))
	if text := c.Error; text != "" {
		s += ": " + Excerpt(text, 160)
	}
	return s
}

// Excerpt is s cut to its first n bytes, with an ellipsis when cut.
func Excerpt(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
