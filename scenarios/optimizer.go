package scenarios

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// Optimizer scenario settings.
const (
	optOpenTimeout    = 2 * time.Second
	optHealthInterval = 100 * time.Millisecond
)

// optimizerScenarios: scenario 4, optimizer exclusion (the four acceptance
// cases of toolhive's vMCP issue #3760). A legacy session's optimizer view
// is fixed when it is created, which is what the cases are about; a
// stateless (modern) client has no session, so for it every request is a
// "new session": judged by the health the backends have when it arrives.
func optimizerScenarios() []Scenario {
	return variants("optimizer", []Variant{
		{harness.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{harness.RevisionLegacy, fakebackends.TransportSSE},
		{harness.RevisionModern, fakebackends.TransportStreamableHTTP},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "find_tool never returns the tools of a backend that was unavailable (circuit open) when the session was created; " +
				"healthy backends' tools are found and called normally; a session created after recovery finds it; " +
				"nothing crashes or hangs with a backend dying during call_tool or every backend unhealthy",
			Labels:  []string{LabelOptimizer},
			Needs:   []harness.Capability{harness.CapOptimizer, harness.CapBreaker, harness.CapHealthAPI},
			Timeout: 45 * time.Second,
			Topology: func() harness.Topology {
				return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: 2 * time.Second, PollHealth: 25 * time.Millisecond,
					Features: harness.Features{
						Optimizer: true,
						Breaker:   &harness.BreakerFeature{FailureThreshold: 2, OpenTimeout: optOpenTimeout},
						Health:    &harness.HealthFeature{Interval: optHealthInterval, Timeout: optHealthInterval / 2, UnhealthyThreshold: 2},
					},
					ClientOptions: []harness.ClientOption{harness.WithCallTimeout(10 * time.Second)}}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runOptimizer(ctx, env, g, v) },
		}
	})
}

// findResult is find_tool's answer.
type findResult struct {
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
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
func findTool(ctx context.Context, g gomega.Gomega, c *harness.Client, description string, keywords ...string) findResult {
	args := map[string]any{"tool_description": description}
	if len(keywords) > 0 {
		args["tool_keywords"] = keywords
	}
	call := c.CallTool(ctx, "find_tool", args)
	g.ExpectWithOffset(1, call.Outcome).To(gomega.Equal(harness.OutcomeOK), "find_tool %q: %s", description, call.Text())
	g.ExpectWithOffset(1, call).To(matchers.ReturnWithin(time.Second).As("find_tool_ms"))
	var res findResult
	g.ExpectWithOffset(1, json.Unmarshal([]byte(call.Text()), &res)).To(gomega.Succeed(), "find_tool's result is JSON: %s", call.Text())
	return res
}

func callTool(ctx context.Context, c *harness.Client, name string, params map[string]any) *harness.Call {
	return c.CallTool(ctx, "call_tool", map[string]any{"tool_name": name, "parameters": params})
}

// betaQueries would all find beta's tools if beta were in the view.
func betaQueries(k *kit.Kit) []struct {
	description string
	keywords    []string
} {
	return []struct {
		description string
		keywords    []string
	}{
		{"echo the arguments of beta", []string{"beta"}},
		{"a slow tool of beta", []string{"beta", "slow"}},
		{"echo", nil},
		{"slow", nil},
		{"beta", []string{k.Tool(beta, "echo"), k.Tool(beta, "slow")}},
	}
}

// checkNoBeta judges that none of betaQueries finds a tool of beta in c's
// session, and, so that an empty or failing find_tool cannot pass for an
// exclusion, that the same queries do find alpha's tools (alpha is
// healthy wherever this is called).
func checkNoBeta(k *kit.Kit, c *harness.Client, why string) {
	betaTools := []string{k.Tool(beta, "echo"), k.Tool(beta, "slow")}
	alphaTools := []string{k.Tool(alpha, "echo"), k.Tool(alpha, "slow")}
	k.Check(why+": find_tool never returns beta's tools", func(ck *kit.C) {
		sawAlpha := false
		for _, q := range betaQueries(k) {
			res := findTool(k.Ctx, ck, c, q.description, q.keywords...)
			for _, n := range res.names() {
				ck.Expect(betaTools).NotTo(gomega.ContainElement(n), "%s: find_tool %q returned beta's %s (%v)", why, q.description, n, res.names())
				sawAlpha = sawAlpha || slices.Contains(alphaTools, n)
			}
		}
		ck.Expect(sawAlpha).To(gomega.BeTrue(), "%s: the same queries find alpha's tools (alpha is healthy)", why)
	})
}

func healthStatus(ctx context.Context, env *harness.Env, backend string) (status, circuit string) {
	states, err := env.HealthStates(ctx)
	if err != nil {
		return "error: " + err.Error(), ""
	}
	return states[backend].State, states[backend].Breaker
}

func runOptimizer(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	rec := env.Recorder()
	// Beta fails its tools/call (it still answers initialize and lists)
	// until its circuit opens: a backend no session should be given.
	warm := k.Client(v.Revision, harness.WithClientName("warm"))
	betaEcho, alphaEcho := k.Tool(beta, "echo"), k.Tool(alpha, "echo")
	k.SetFaults(beta, onCall(fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 500}))
	opened := kit.Until(ctx, 5*time.Second, func() bool {
		if _, circuit := healthStatus(ctx, env, beta); circuit == "open" {
			return true
		}
		callTool(ctx, warm, betaEcho, echoArgs("fail"))
		_, circuit := healthStatus(ctx, env, beta)
		return circuit == "open"
	})
	g.Expect(opened).To(gomega.BeTrue(), "beta's circuit opens after failed calls")

	// Case 1: a session created now never finds beta's tools, for any
	// query, and cannot call them.
	c1 := k.Client(v.Revision, harness.WithClientName("during"))
	_, circuit := healthStatus(ctx, env, beta)
	g.Expect(circuit).To(gomega.Equal("open"), "beta's circuit was still open when the session was created")
	k.Check("case 1: tools/list shows only the optimizer's tools", func(ck *kit.C) {
		names, err := c1.ToolNames(ctx)
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "tools/list with the optimizer")
		ck.Expect(names).To(gomega.ConsistOf("find_tool", "call_tool"), "the optimizer's tools/list")
	})
	checkNoBeta(k, c1, "case 1: session created while beta's circuit was open")
	notFound := callTool(ctx, c1, betaEcho, echoArgs("x"))
	k.Check("case 1: call_tool of beta's tool fails within 1 s naming the tool", func(ck *kit.C) {
		ck.Evidence(notFound)
		ck.Expect(notFound.Outcome).NotTo(gomega.Equal(harness.OutcomeOK), "call_tool of beta's tool in a session without beta")
		ck.Expect(notFound.Text()).To(gomega.ContainSubstring(betaEcho), "call_tool's error names the tool it could not find")
		ck.Expect(notFound).To(matchers.ReturnWithin(time.Second))
	})

	// Case 2: healthy backends are unaffected: found first, called.
	k.Check("case 2: alpha's echo is found first, with token metrics", func(ck *kit.C) {
		res := findTool(ctx, ck, c1, "echo the arguments of alpha", "alpha")
		ck.Expect(res.names()).NotTo(gomega.BeEmpty(), "find_tool for alpha's echo")
		ck.Expect(res.names()[0]).To(gomega.Equal(alphaEcho), "alpha's echo ranks first (%v)", res.names())
		ck.Expect(res.TokenMetrics.BaselineTokens).To(gomega.BeNumerically(">", 0), "token_metrics.baseline_tokens")
		rec.SetFigure("savings_percent", res.TokenMetrics.SavingsPercent)
	})
	k.CheckOK("case 2: call_tool calls alpha's echo", callTool(ctx, c1, alphaEcho, echoArgs("via call_tool")))

	// Case 3: beta recovers (the circuit closes); a new session finds and
	// calls its tools; the old session still does not (its view is fixed).
	k.ClearFaults(beta)
	recovered := time.Now()
	back := kit.Until(ctx, optOpenTimeout+5*time.Second, func() bool {
		status, circuit := healthStatus(ctx, env, beta)
		return circuit == "closed" && status == "healthy"
	})
	status, circuit := healthStatus(ctx, env, beta)
	g.Expect(back).To(gomega.BeTrue(), "beta healthy with its circuit closed again (status %q, circuit %q)", status, circuit)
	rec.SetFigure("recovery_ms", ms(time.Since(recovered)))
	c2 := k.Client(v.Revision, harness.WithClientName("after"))
	k.Check("case 3: a new session finds beta's echo first after recovery", func(ck *kit.C) {
		res := findTool(ctx, ck, c2, "echo the arguments of beta", "beta")
		ck.Expect(res.names()).NotTo(gomega.BeEmpty(), "find_tool for beta's echo after recovery")
		ck.Expect(res.names()[0]).To(gomega.Equal(betaEcho), "beta's echo ranks first after recovery (%v)", res.names())
	})
	k.CheckOK("case 3: call_tool calls beta's echo after recovery", callTool(ctx, c2, betaEcho, echoArgs("recovered")))
	if v.Revision == harness.RevisionLegacy {
		checkNoBeta(k, c1, "case 3: the session created while beta was out, after beta recovered")
	} else {
		// No session to hold a view: the same stateless client's next
		// request is judged now, and finds beta again.
		k.Check("case 3: a stateless client's request after recovery finds beta", func(ck *kit.C) {
			res := findTool(ctx, ck, c1, "echo the arguments of beta", "beta")
			ck.Expect(res.names()).To(gomega.ContainElement(betaEcho), "a stateless client's request after recovery finds beta (%v)", res.names())
		})
	}

	// Case 4: no crash or hang. A backend dying during call_tool...
	k.SetFaults(beta, onCall(fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: fakebackends.CrashReset}))
	k.CheckCall("case 4: call_tool while beta dies fails naming beta within 1 s", callTool(ctx, c2, betaEcho, echoArgs("dying")),
		matchers.BeBackendUnavailable(beta), matchers.ReturnWithin(time.Second).As("time_to_error_ms.call_tool_dying"))
	// ... and every backend unhealthy.
	all500 := fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 500}
	k.SetFaults(alpha, all500)
	k.SetFaults(beta, all500)
	down := kit.Until(ctx, 5*time.Second, func() bool {
		a, _ := healthStatus(ctx, env, alpha)
		b, _ := healthStatus(ctx, env, beta)
		return a == "unhealthy" && b == "unhealthy"
	})
	a, _ := healthStatus(ctx, env, alpha)
	b, _ := healthStatus(ctx, env, beta)
	g.Expect(down).To(gomega.BeTrue(), "both backends unhealthy (alpha %q, beta %q)", a, b)
	start := time.Now()
	c3, err := env.Client(ctx, v.Revision, harness.WithClientName("all-down"))
	took := time.Since(start)
	rec.SetFigure("connect_all_down_ms", ms(took))
	k.Check("case 4: a session opens within 2 s with every backend unhealthy", func(ck *kit.C) {
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "a session opens with every backend unhealthy")
		ck.Expect(took).To(gomega.BeNumerically("<=", 2*time.Second), "connecting with every backend unhealthy")
	})
	if err == nil {
		k.Check("case 4: with every backend unhealthy find_tool finds nothing and says no backend", func(ck *kit.C) {
			names, err := c3.ToolNames(ctx)
			ck.Expect(err).NotTo(gomega.HaveOccurred(), "tools/list with every backend unhealthy")
			ck.Expect(names).To(gomega.ConsistOf("find_tool", "call_tool"))
			empty := findTool(ctx, ck, c3, "echo the arguments of alpha", "alpha")
			ck.Expect(empty.Tools).To(gomega.BeEmpty(), "find_tool with every backend unhealthy")
			ck.Expect(strings.ToLower(empty.Message)).To(gomega.ContainSubstring("no backend"), "find_tool says no backend is available")
		})
		k.CheckCall("case 4: call_tool with every backend unhealthy fails within 1 s", callTool(ctx, c3, alphaEcho, echoArgs("x")),
			gomega.Not(matchers.HaveOutcome(harness.OutcomeOK)), matchers.ReturnWithin(time.Second).As("time_to_error_ms.call_tool_all_down"))
	}
	// The earlier session still answers, with errors naming the backend
	// (a stateless client's request is judged now: alpha is out of it).
	old := callTool(ctx, c2, alphaEcho, echoArgs("x"))
	if v.Revision == harness.RevisionLegacy {
		k.CheckCall("case 4: call_tool in an older session with alpha down names alpha within 1 s", old,
			matchers.BeBackendUnavailable(alpha), matchers.ReturnWithin(time.Second))
	} else {
		k.CheckCall("case 4: call_tool from a stateless client with alpha down fails within 1 s", old,
			gomega.Not(matchers.HaveOutcome(harness.OutcomeOK)), matchers.ReturnWithin(time.Second))
	}
	k.Check("case 4: find_tool still answers in the older session", func(ck *kit.C) { findTool(ctx, ck, c2, "echo") })

	k.ClearFaults(alpha)
	k.ClearFaults(beta)
}
