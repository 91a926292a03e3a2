package scenarios

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
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

// Optimizer scenario settings.
const (
	optOpenTimeout = 2 * time.Second
	// The health monitor probes every 250 ms with a 200 ms timeout: a
	// 50 ms probe timeout failed healthy backends' probes twice in a row on
	// a loaded machine (load average 13), and beta's circuit was open again
	// right after its recovery had been seen.
	optHealthInterval = 250 * time.Millisecond
	optHealthTimeout  = 200 * time.Millisecond
)

// optimizerScenarios: scenario 4, optimizer exclusion (the four acceptance
// cases of toolhive's vMCP issue #3760). A legacy session's optimizer view
// is fixed when it is created, which is what the cases are about; a
// stateless (modern) client has no session, so for it every request is a
// "new session": judged by the health the backends have when it arrives.
func optimizerScenarios() []Scenario {
	return variants("optimizer", []Variant{
		{history.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{history.RevisionLegacy, fakebackends.TransportSSE},
		{history.RevisionModern, fakebackends.TransportStreamableHTTP},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "find_tool never returns the tools of a backend that was unavailable (circuit open) when the session was created; " +
				"healthy backends' tools are found and called normally; a session created after recovery finds it; " +
				"nothing crashes or hangs with a backend dying during call_tool or every backend unhealthy",
			Labels:      []string{LabelOptimizer},
			Needs:       []targets.Capability{targets.CapOptimizer, targets.CapBreaker},
			Conditional: optimizerHealthChecks,
			Timeout:     45 * time.Second,
			Topology: twoBackendsTopology(v, 2*time.Second, 10*time.Second, func(t *harness.Topology) {
				t.PollHealth = 25 * time.Millisecond
				t.Features = runtimes.Features{
					Optimizer: true,
					Breaker:   &runtimes.BreakerFeature{FailureThreshold: 2, OpenTimeout: optOpenTimeout},
					Health:    &runtimes.HealthFeature{Interval: optHealthInterval, Timeout: optHealthTimeout, UnhealthyThreshold: 2},
				}
			}),
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runOptimizer(ctx, env, g, v) },
		}
	})
}

// findResult is find_tool's answer.
type findResult struct {
	Tools        []mcp.Tool `json:"tools"`
	TokenMetrics struct {
		BaselineTokens float64 `json:"baseline_tokens"`
		ReturnedTokens float64 `json:"returned_tokens"`
		SavingsPercent float64 `json:"savings_percent"`
	} `json:"token_metrics"`
	Message string `json:"message"`
}

func (f findResult) names() []string {
	out := make([]string, len(f.Tools))
	for i, t := range f.Tools {
		out[i] = t.Name
	}
	return out
}

// findTool calls find_tool, asserting with g that it answered (not an
// error) within 1 s, and decodes the result.
func findTool(k *kit.Kit, g gomega.Gomega, c *history.Client, description string, keywords ...string) findResult {
	res, call, err := tryFind(k.Ctx, c, description, keywords...)
	expectFound(k, g, description, call, err)
	return res
}

// expectFound judges find_tool's answer to description (tryFind's call
// and error): a JSON result within 1 s, net of the time this process
// stalled meanwhile (k.Net: on a loaded machine nothing ran then).
func expectFound(k *kit.Kit, g gomega.Gomega, description string, call *history.Call, err error) {
	g.ExpectWithOffset(2, call.Outcome).To(gomega.Equal(history.OutcomeOK), "find_tool %q: %s", description, call.Text())
	if net := k.Net(call); net < call.Took() && net <= time.Second {
		k.Note("find_tool %q took %s, %s of it while this process stalled", description, call.Took().Round(time.Millisecond), (call.Took() - net).Round(time.Millisecond))
	} else {
		g.ExpectWithOffset(2, call).To(matchers.ReturnWithin(time.Second).As("find_tool_ms"))
	}
	g.ExpectWithOffset(2, err).To(gomega.Succeed(), "find_tool's result is JSON: %s", call.Text())
}

// learnNames finds the backends' tools by their origin markers in
// find_tool's results (with the optimizer on, tools/list shows only
// find_tool and call_tool): the names call_tool is then given are the
// gateway's, not guessed from the toolNames pattern.
func (o *optRun) learnNames() {
	for _, b := range []string{alpha, beta} {
		for _, q := range []string{"echo the arguments of " + b, "a slow tool of " + b} {
			if res, _, err := tryFind(o.k.Ctx, o.warm, q, b); err == nil {
				o.k.Names().LearnTools(res.Tools)
			}
		}
	}
}

func callTool(ctx context.Context, c *history.Client, name string, params map[string]any) *history.Call {
	return c.CallTool(ctx, "call_tool", map[string]any{"tool_name": name, "parameters": params})
}

// checkNoBeta judges that none of the queries below finds a tool of beta
// in c's session (each would, were beta in the view), and, so that an
// empty or failing find_tool cannot pass for an exclusion, that the same
// queries do find alpha's tools. That needs alpha in the session's view:
// when alphaOut says why the gateway had alpha out (see alphaOut) and the
// queries found none of alpha's tools, the check is inconclusive.
func checkNoBeta(k *kit.Kit, c *history.Client, why, alphaOut string) {
	betaTools := []string{k.Tool(beta, "echo"), k.Tool(beta, "slow")}
	alphaTools := []string{k.Tool(alpha, "echo"), k.Tool(alpha, "slow")}
	queries := []struct {
		description string
		keywords    []string
	}{
		{"echo the arguments of beta", []string{"beta"}},
		{"a slow tool of beta", []string{"beta", "slow"}},
		{"echo", nil},
		{"slow", nil},
		{"beta", betaTools},
	}
	type found struct {
		description string
		res         findResult
		call        *history.Call
		err         error
	}
	var answers []found
	sawAlpha := false
	for _, q := range queries {
		res, call, err := tryFind(k.Ctx, c, q.description, q.keywords...)
		answers = append(answers, found{q.description, res, call, err})
		for _, n := range res.names() {
			sawAlpha = sawAlpha || slices.Contains(alphaTools, n)
		}
	}
	name := why + ": find_tool never returns beta's tools"
	if !sawAlpha && alphaOut != "" {
		calls := []*history.Call{}
		for _, a := range answers {
			calls = append(calls, a.call)
		}
		k.Inconclusive(name, "find_tool found no tool of alpha either, and "+alphaOut+": an empty view cannot show beta excluded", calls...)
		return
	}
	k.Check(name, func(ck *kit.C) {
		for _, a := range answers {
			ck.Evidence(a.call)
			expectFound(k, ck, a.description, a.call, a.err)
			for _, n := range a.res.names() {
				ck.Expect(betaTools).NotTo(gomega.ContainElement(n), "%s: find_tool %q returned beta's %s (%v)", why, a.description, n, a.res.names())
			}
		}
		ck.Expect(sawAlpha).To(gomega.BeTrue(), "%s: the same queries find alpha's tools (nothing showed alpha out of the view)", why)
	})
}

// The optimizer scenario's checks that read the health API. Without it
// the scenario waits for the same states by behaviour: beta's circuit open
// when a call to beta's echo fails without reaching beta, beta recovered
// when a new session finds its echo first, every backend unhealthy when a
// new session's find_tool finds nothing (see optimizer_cases.go).
var optimizerHealthChecks = []ConditionalCheck{
	{Name: optHealthOpen, Needs: []targets.Capability{targets.CapHealthAPI}},
	{Name: optHealthRecovered, Needs: []targets.Capability{targets.CapHealthAPI}},
	{Name: optHealthAllDown, Needs: []targets.Capability{targets.CapHealthAPI}},
}

const (
	optHealthOpen      = "health API: beta's circuit open after its failed calls"
	optHealthRecovered = "health API: beta healthy, its circuit closed again after recovery"
	optHealthAllDown   = "health API: both backends unhealthy when every request fails"
)

func runOptimizer(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	o := &optRun{k: kit.New(ctx, env, g), v: v, health: env.Capabilities().Has(targets.CapHealthAPI)}
	k := o.k
	defer k.WatchStalls()()
	// Beta fails its tools/call (it still answers initialize and lists)
	// until its circuit opens: a backend no session should be given.
	o.warm = k.Client(v.Revision, history.WithClientName("warm"))
	o.learnNames()
	o.betaEcho, o.alphaEcho = k.Tool(beta, "echo"), k.Tool(alpha, "echo")
	k.SetFaults(beta, onCall(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 500}}))
	if !o.openBeta() {
		return
	}

	// Case 1: a session created now never finds beta's tools, for any
	// query, and cannot call them.
	// The session's view is decided when it is created: alpha's state
	// just before and just after bounds what the gateway saw then.
	alphaBefore := o.alphaOut("just before the case-1 session was created")
	c1 := k.Client(v.Revision, history.WithClientName("during"))
	o.stillOpen()
	alphaOut := cmp.Or(alphaBefore, o.alphaOut("just after the case-1 session was created"))
	k.Check("case 1: tools/list shows only the optimizer's tools", func(ck *kit.C) {
		names, err := c1.ToolNames(ctx)
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "tools/list with the optimizer")
		ck.Expect(names).To(gomega.ConsistOf("find_tool", "call_tool"), "the optimizer's tools/list")
	})
	checkNoBeta(k, c1, "case 1: session created while beta's circuit was open", cmp.Or(alphaOut, o.noHealthAPI("as case 1 looked for tools")))
	notFound := callTool(ctx, c1, o.betaEcho, echoArgs("x"))
	k.CheckPremise("case 1: call_tool of beta's tool fails within 1 s naming the tool", "", notFound, func(ck *kit.C) {
		ck.Expect(notFound.Outcome).NotTo(gomega.Equal(history.OutcomeOK), "call_tool of beta's tool in a session without beta")
		ck.Expect(notFound.Text()).To(gomega.ContainSubstring(o.betaEcho), "call_tool's error names the tool it could not find")
		ck.ReturnsWithin(c1, notFound, time.Second, "")
	})

	// Case 2: healthy backends are unaffected: found first, called.
	// Case 2 needs alpha in the session's view.
	if alphaOut != "" {
		k.Inconclusive("case 2: alpha's echo is found first, with token metrics", alphaOut)
		k.Inconclusive("case 2: call_tool calls alpha's echo", alphaOut)
	} else {
		o.case2(c1)
	}

	c2 := o.case3(c1, alphaOut)
	if c2 == nil {
		return
	}
	o.case4(c2)
}
