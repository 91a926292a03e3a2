package kit

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
)

// controlPings is how many pings OverBound sends to see how slow the
// machine is.
const controlPings = 3

// OverBound returns "" when call's time says something of the gateway
// against bound, and otherwise why not. A call within bound always does.
// One over bound does not when:
//   - this process stalled at once for at least the excess while it was
//     in flight (StalledOver), or
//   - the machine is that slow: of controlPings pings on c's session
//     right after (the gateway answers them itself, with no backend), the
//     slowest took at least the excess. On a machine running two -race
//     suites every goroutine gets a sliver of a core: a 403 relayed in
//     1.18 s, with no stall longer than 20 ms seen.
//
// The check is then inconclusive, never passed. A gateway that reports
// failures late while it answers pings at once is judged, loaded or not.
// With c nil (no session to ping on) only the stall counts.
func (k *Kit) OverBound(c *history.Client, call *history.Call, bound time.Duration) string {
	if call.Took() <= bound || !grounded(k.Ctx) {
		return ""
	}
	if why := k.StalledOver(call, bound); why != "" || c == nil {
		return why
	}
	excess := call.Took() - bound
	slowest := k.slowestPing(c, excess)
	if slowest < excess {
		return ""
	}
	return fmt.Sprintf("%s %s took %s against %s, and a ping the gateway answers itself took %s right after (the slowest of %d): the machine was slower than the %s excess, so the time says nothing of the gateway",
		call.Method, call.Target, call.Took().Round(time.Millisecond), bound, slowest.Round(time.Millisecond), controlPings, excess.Round(time.Millisecond))
}

// slowestPing is the slowest of controlPings pings on c's session (the
// gateway answers them itself, with no backend), each bounded by excess
// and a second; 0 when one fails (a gateway that does not answer pings
// shows nothing of the machine).
func (k *Kit) slowestPing(c *history.Client, excess time.Duration) time.Duration {
	var slowest time.Duration
	for range controlPings {
		ctx, cancel := context.WithTimeout(k.Ctx, excess+time.Second)
		start := time.Now()
		err := c.MCP().Ping(ctx)
		took := time.Since(start)
		cancel()
		if err != nil {
			return 0
		}
		slowest = max(slowest, took)
	}
	return slowest
}

// CheckCallWithin is CheckCall of ms, then FailsWithin(c, call, bound,
// figure): the matchers are judged always, the time unless OverBound says
// why it says nothing of the gateway (the check is inconclusive then).
func (k *Kit) CheckCallWithin(name string, c *history.Client, call *history.Call, bound time.Duration, figure string, ms ...types.GomegaMatcher) bool {
	return k.Check(name, func(ck *C) {
		ck.Evidence(call)
		for _, m := range ms {
			ck.Expect(call).To(m)
		}
		ck.FailsWithin(c, call, bound, figure)
	})
}

// FailsWithin asserts that call failed within bound (matchers.FailWithin;
// its time recorded as figure when not ""). That it failed is judged as
// any assertion; its time is not when OverBound (pinging on client) says
// why it says nothing of the gateway: over bound, the check is then
// inconclusive with that reason, never failed. Every time bound of a
// scenario goes through FailsWithin, ReturnsWithin or CheckCallWithin
// (TestTimeBoundsGoThroughTheKit), so none is judged on a machine too
// slow to say anything.
func (c *C) FailsWithin(client *history.Client, call *history.Call, bound time.Duration, figure string) {
	ExpectFailed(c, call)
	c.within(client, call, bound, matchers.FailWithin(bound).As(figure))
}

// ReturnsWithin asserts that call returned within bound, whatever its
// outcome (matchers.ReturnWithin; its time recorded as figure when not
// ""), judged as FailsWithin judges its time.
func (c *C) ReturnsWithin(client *history.Client, call *history.Call, bound time.Duration, figure string) {
	c.within(client, call, bound, matchers.ReturnWithin(bound).As(figure))
}

// within asserts m on call with the excuse OverBound gives, withdrawn
// once m held (the body's later assertions are judged as before).
func (c *C) within(client *history.Client, call *history.Call, bound time.Duration, m types.GomegaMatcher) {
	c.Evidence(call)
	prev := c.excuse
	if why := c.k.OverBound(client, call, bound); why != "" {
		c.Excuse("%s", why)
	}
	c.ExpectWithOffset(2, call).To(m)
	c.excuse = prev
}

// TookWithin asserts that what, begun at start, took at most bound: a
// time that is not one call's (from a SIGKILL to the failure of the call
// in flight, a session open that polls). Over bound, it is judged as
// FailsWithin judges a call's time (Kit.LateThrough, pinging on client
// when not nil): the check is then inconclusive, never failed, when the
// machine shows it could not have done better.
func (c *C) TookWithin(client *history.Client, what string, start time.Time, took, bound time.Duration) {
	prev := c.excuse
	if why := c.k.LateThrough(client, what, start, took, bound); why != "" {
		c.Excuse("%s", why)
	}
	c.ExpectWithOffset(1, took).To(gomega.BeNumerically("<=", bound), "%s took %s, beyond %s", what, took.Round(time.Millisecond), bound)
	c.excuse = prev
}
