package scenarios

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
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

// findTool calls find_tool, asserting it answered (not an error) within
// 1 s, and decodes the result.
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
var betaQueries = []struct {
	description string
	keywords    []string
}{
	{"echo the arguments of beta", []string{"beta"}},
	{"a slow tool of beta", []string{"beta", "slow"}},
	{"echo", nil},
	{"slow", nil},
	{"beta", []string{"beta_echo", "beta_slow"}},
}

// expectNoBeta asserts that none of betaQueries finds a tool of beta in
// c's session, and, so that an empty or failing find_tool cannot pass for
// an exclusion, that the same queries do find alpha's tools (alpha is
// healthy wherever this is called).
func expectNoBeta(ctx context.Context, g gomega.Gomega, c *harness.Client, why string) {
	sawAlpha := false
	for _, q := range betaQueries {
		res := findTool(ctx, g, c, q.description, q.keywords...)
		for _, n := range res.names() {
			g.ExpectWithOffset(1, strings.HasPrefix(n, beta+"_")).To(gomega.BeFalse(), "%s: find_tool %q returned beta's %s (%v)", why, q.description, n, res.names())
			sawAlpha = sawAlpha || strings.HasPrefix(n, alpha+"_")
		}
	}
	g.ExpectWithOffset(1, sawAlpha).To(gomega.BeTrue(), "%s: the same queries find alpha's tools (alpha is healthy)", why)
}

func healthStatus(ctx context.Context, env *harness.Env, backend string) (status, circuit string) {
	states, err := env.HealthStates(ctx)
	if err != nil {
		return "error: " + err.Error(), ""
	}
	return states[backend].State, states[backend].Breaker
}

func runOptimizer(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	rec := env.Recorder()
	// Beta fails its tools/call (it still answers initialize and lists)
	// until its circuit opens: a backend no session should be given.
	warm := client(ctx, env, g, v.Revision, harness.WithClientName("warm"))
	must(g, env.SetFaults(ctx, beta, onCall(fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 500})), "500 on beta's tools/call")
	opened := waitUntil(ctx, 5*time.Second, func() bool {
		if _, circuit := healthStatus(ctx, env, beta); circuit == "open" {
			return true
		}
		callTool(ctx, warm, tool(beta, "echo"), echoArgs("fail"))
		_, circuit := healthStatus(ctx, env, beta)
		return circuit == "open"
	})
	g.Expect(opened).To(gomega.BeTrue(), "beta's circuit opens after failed calls")

	// Case 1: a session created now never finds beta's tools, for any
	// query, and cannot call them.
	c1 := client(ctx, env, g, v.Revision, harness.WithClientName("during"))
	_, circuit := healthStatus(ctx, env, beta)
	g.Expect(circuit).To(gomega.Equal("open"), "beta's circuit was still open when the session was created")
	names, err := c1.ToolNames(ctx)
	must(g, err, "tools/list with the optimizer")
	g.Expect(names).To(gomega.ConsistOf("find_tool", "call_tool"), "the optimizer's tools/list")
	expectNoBeta(ctx, g, c1, "session created while beta's circuit was open")
	notFound := callTool(ctx, c1, tool(beta, "echo"), echoArgs("x"))
	g.Expect(notFound.Outcome).NotTo(gomega.Equal(harness.OutcomeOK), "call_tool of beta's tool in a session without beta")
	g.Expect(notFound.Text()).To(gomega.ContainSubstring(tool(beta, "echo")), "call_tool's error names the tool it could not find")
	g.Expect(notFound).To(matchers.ReturnWithin(time.Second))

	// Case 2: healthy backends are unaffected: found first, called.
	res := findTool(ctx, g, c1, "echo the arguments of alpha", "alpha")
	g.Expect(res.names()).NotTo(gomega.BeEmpty(), "find_tool for alpha's echo")
	g.Expect(res.names()[0]).To(gomega.Equal(tool(alpha, "echo")), "alpha's echo ranks first (%v)", res.names())
	g.Expect(res.TokenMetrics.BaselineTokens).To(gomega.BeNumerically(">", 0), "token_metrics.baseline_tokens")
	rec.SetFigure("savings_percent", res.TokenMetrics.SavingsPercent)
	expectOK(g, callTool(ctx, c1, tool(alpha, "echo"), echoArgs("via call_tool")), "call_tool alpha_echo")

	// Case 3: beta recovers (the circuit closes); a new session finds and
	// calls its tools; the old session still does not (its view is fixed).
	must(g, env.ClearFaults(ctx, beta), "clear beta")
	recovered := time.Now()
	back := waitUntil(ctx, optOpenTimeout+5*time.Second, func() bool {
		status, circuit := healthStatus(ctx, env, beta)
		return circuit == "closed" && status == "healthy"
	})
	status, circuit := healthStatus(ctx, env, beta)
	g.Expect(back).To(gomega.BeTrue(), "beta healthy with its circuit closed again (status %q, circuit %q)", status, circuit)
	rec.SetFigure("recovery_ms", ms(time.Since(recovered)))
	c2 := client(ctx, env, g, v.Revision, harness.WithClientName("after"))
	res = findTool(ctx, g, c2, "echo the arguments of beta", "beta")
	g.Expect(res.names()).NotTo(gomega.BeEmpty(), "find_tool for beta's echo after recovery")
	g.Expect(res.names()[0]).To(gomega.Equal(tool(beta, "echo")), "beta's echo ranks first after recovery (%v)", res.names())
	expectOK(g, callTool(ctx, c2, tool(beta, "echo"), echoArgs("recovered")), "call_tool beta_echo after recovery")
	if v.Revision == harness.RevisionLegacy {
		expectNoBeta(ctx, g, c1, "the session created while beta was out, after beta recovered")
	} else {
		// No session to hold a view: the same stateless client's next
		// request is judged now, and finds beta again.
		res = findTool(ctx, g, c1, "echo the arguments of beta", "beta")
		g.Expect(res.names()).To(gomega.ContainElement(tool(beta, "echo")), "a stateless client's request after recovery finds beta (%v)", res.names())
	}

	// Case 4: no crash or hang. A backend dying during call_tool...
	must(g, env.SetFaults(ctx, beta, onCall(fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: fakebackends.CrashReset})), "reset on beta's tools/call")
	dying := callTool(ctx, c2, tool(beta, "echo"), echoArgs("dying"))
	g.Expect(dying).To(matchers.BeBackendUnavailable(beta), "call_tool while beta dies")
	g.Expect(dying).To(matchers.ReturnWithin(time.Second).As("time_to_error_ms.call_tool_dying"))
	// ... and every backend unhealthy.
	all500 := fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 500}
	must(g, env.SetFaults(ctx, alpha, all500), "500 on everything of alpha")
	must(g, env.SetFaults(ctx, beta, all500), "500 on everything of beta")
	down := waitUntil(ctx, 5*time.Second, func() bool {
		a, _ := healthStatus(ctx, env, alpha)
		b, _ := healthStatus(ctx, env, beta)
		return a == "unhealthy" && b == "unhealthy"
	})
	a, _ := healthStatus(ctx, env, alpha)
	b, _ := healthStatus(ctx, env, beta)
	g.Expect(down).To(gomega.BeTrue(), "both backends unhealthy (alpha %q, beta %q)", a, b)
	start := time.Now()
	c3, err := env.Client(ctx, v.Revision, harness.WithClientName("all-down"))
	rec.SetFigure("connect_all_down_ms", ms(time.Since(start)))
	g.Expect(err).NotTo(gomega.HaveOccurred(), "a session opens with every backend unhealthy")
	g.Expect(time.Since(start)).To(gomega.BeNumerically("<=", 2*time.Second), "connecting with every backend unhealthy")
	names, err = c3.ToolNames(ctx)
	must(g, err, "tools/list with every backend unhealthy")
	g.Expect(names).To(gomega.ConsistOf("find_tool", "call_tool"))
	empty := findTool(ctx, g, c3, "echo the arguments of alpha", "alpha")
	g.Expect(empty.Tools).To(gomega.BeEmpty(), "find_tool with every backend unhealthy")
	g.Expect(strings.ToLower(empty.Message)).To(gomega.ContainSubstring("no backend"), "find_tool says no backend is available")
	nothing := callTool(ctx, c3, tool(alpha, "echo"), echoArgs("x"))
	g.Expect(nothing.Outcome).NotTo(gomega.Equal(harness.OutcomeOK), "call_tool with every backend unhealthy")
	g.Expect(nothing).To(matchers.ReturnWithin(time.Second).As("time_to_error_ms.call_tool_all_down"))
	// The earlier session still answers, with errors naming the backend
	// (a stateless client's request is judged now: alpha is out of it).
	old := callTool(ctx, c2, tool(alpha, "echo"), echoArgs("x"))
	if v.Revision == harness.RevisionLegacy {
		g.Expect(old).To(matchers.BeBackendUnavailable(alpha), "call_tool alpha_echo in an older session with alpha down")
	} else {
		g.Expect(old.Outcome).NotTo(gomega.Equal(harness.OutcomeOK), "call_tool alpha_echo from a stateless client with alpha down")
	}
	g.Expect(old).To(matchers.ReturnWithin(time.Second))
	findTool(ctx, g, c2, "echo")

	must(g, env.ClearFaults(ctx, alpha), "clear alpha")
	must(g, env.ClearFaults(ctx, beta), "clear beta")
}
