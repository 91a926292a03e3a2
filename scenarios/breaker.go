package scenarios

import (
	"context"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
)

// Breaker scenario settings.
const (
	breakerThreshold   = 3
	breakerOpenTimeout = time.Second
	breakerOpenCalls   = 5 // calls made while the circuit is open
)

// breakerScenarios: scenario 3, breaker recovery.
func breakerScenarios() []Scenario {
	return variants("breaker", []Variant{
		{harness.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{harness.RevisionModern, fakebackends.TransportSSE},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "consecutive failures open beta's circuit; while open, calls fail fast without reaching beta; once beta is back the circuit goes " +
				"half-open then closed and beta's tools work; the metrics' transition counters match the transitions seen",
			Labels:  []string{LabelBreaker},
			Needs:   []harness.Capability{harness.CapBreaker, harness.CapHealthAPI},
			Timeout: 30 * time.Second,
			Topology: func() harness.Topology {
				return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: 2 * time.Second, PollHealth: 20 * time.Millisecond,
					Features:      harness.Features{Breaker: &harness.BreakerFeature{FailureThreshold: breakerThreshold, OpenTimeout: breakerOpenTimeout}, Metrics: true},
					ClientOptions: []harness.ClientOption{harness.WithCallTimeout(10 * time.Second)}}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runBreaker(ctx, env, g, v) },
		}
	})
}

// breakerState reads beta's circuit state from the health API.
func breakerState(ctx context.Context, env *harness.Env, backend string) string {
	states, err := env.HealthStates(ctx)
	if err != nil {
		return "error: " + err.Error()
	}
	return states[backend].Breaker
}

func runBreaker(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	rec := env.Recorder()
	c := client(ctx, env, g, v.Revision)
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before any fault")
	g.Expect(breakerState(ctx, env, beta)).To(gomega.Equal("closed"), "beta's circuit at the start")

	// Consecutive failures open the circuit.
	must(g, env.SetFaults(ctx, beta, onCall(fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 500})), "500 on beta")
	failStart := time.Now()
	for i := range breakerThreshold {
		call := c.CallTool(ctx, tool(beta, "echo"), echoArgs("fail"))
		g.Expect(call).To(matchers.BeBackendUnavailable(beta), "failing call %d", i+1)
	}
	opened := waitUntil(ctx, 2*time.Second, func() bool { return breakerState(ctx, env, beta) == "open" })
	rec.SetFigure("time_to_open_ms", ms(time.Since(failStart)))
	g.Expect(opened).To(gomega.BeTrue(), "beta's circuit opens after %d consecutive failures (state %q)", breakerThreshold, breakerState(ctx, env, beta))

	// While open: calls fail at once, naming beta, and never reach it.
	before, err := countRequests(ctx, env, beta, "tools/call")
	must(g, err, "read beta's request log")
	for i := range breakerOpenCalls {
		call := c.CallTool(ctx, tool(beta, "echo"), echoArgs("while open"))
		g.Expect(call).To(matchers.BeBackendUnavailable(beta), "call %d while the circuit is open", i+1)
		g.Expect(call).To(matchers.ReturnWithin(time.Second).As("open_fail_fast_max_ms"))
	}
	after, err := countRequests(ctx, env, beta, "tools/call")
	must(g, err, "read beta's request log")
	g.Expect(after-before).To(gomega.BeZero(), "calls made while the circuit is open reached beta")
	expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs("bystander")), "alpha while beta's circuit is open")

	// Beta comes back: after the open timeout the circuit is half-open, a
	// trial call goes through and closes it.
	must(g, env.ClearFaults(ctx, beta), "clear beta")
	recovered := time.Now()
	halfOpen := waitUntil(ctx, breakerOpenTimeout+2*time.Second, func() bool { return breakerState(ctx, env, beta) == "half-open" })
	g.Expect(halfOpen).To(gomega.BeTrue(), "beta's circuit goes half-open after the open timeout (state %q)", breakerState(ctx, env, beta))
	rec.SetFigure("time_to_half_open_ms", ms(time.Since(recovered)))
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("trial")), "the trial call in half-open")
	closed := waitUntil(ctx, 2*time.Second, func() bool { return breakerState(ctx, env, beta) == "closed" })
	rec.SetFigure("time_to_close_ms", ms(time.Since(recovered)))
	g.Expect(closed).To(gomega.BeTrue(), "beta's circuit closes after a successful trial (state %q)", breakerState(ctx, env, beta))
	for range 3 {
		expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("closed again")), "beta after its circuit closed")
	}
	expectOK(g, c.ReadResource(ctx, readme(beta)), "beta's resource after its circuit closed")

	// The waits above saw closed, open, half-open and closed in turn. The
	// background poller samples, so it may miss the short half-open
	// window, but what it saw must follow the same path.
	if p := env.HealthPoller(); p != nil {
		_, _ = p.Poll(ctx)
	}
	path := []string{"closed"}
	for _, tr := range rec.Transitions() {
		if tr.Backend == beta && tr.Aspect == "breaker" && tr.From != "" {
			path = append(path, tr.To)
		}
	}
	g.Expect(isSubsequence(path, []string{"closed", "open", "half-open", "closed"})).To(gomega.BeTrue(),
		"beta's circuit states seen by the health poller %v do not follow closed, open, half-open, closed", path)
	g.Expect(path).To(gomega.ContainElement("open"), "the health poller saw beta's circuit open")

	// The metrics counters match them, exactly.
	if !env.Capabilities().Has(harness.CapMetrics) {
		rec.SkipCheck("circuit breaker metrics counters: target %s lacks capability %s", env.Target().Name(), harness.CapMetrics)
	} else {
		m, err := scrapeMetrics(ctx, env.Gateway().BaseURL())
		must(g, err, "scrape /metrics")
		const name = "vmcp_circuit_breaker_transitions_total"
		g.Expect(m.has(name)).To(gomega.BeTrue(), "%s is exported", name)
		for _, tr := range [][2]string{{"closed", "open"}, {"open", "half-open"}, {"half-open", "closed"}} {
			n := m.sum(name, map[string]string{"backend_id": beta, "from": tr[0], "to": tr[1]})
			rec.SetFigure("metric_transitions."+tr[0]+"_to_"+tr[1], n)
			g.Expect(n).To(gomega.Equal(1.0), "%s{backend_id=beta,from=%s,to=%s}", name, tr[0], tr[1])
		}
		g.Expect(m.sum(name, map[string]string{"backend_id": beta})).To(gomega.Equal(3.0), "beta's transitions in total")
		g.Expect(m.sum(name, map[string]string{"backend_id": alpha})).To(gomega.BeZero(), "alpha's circuit never moved")
		g.Expect(m.sum("vmcp_circuit_breaker_state", map[string]string{"backend_id": beta, "state": "closed"})).To(gomega.Equal(1.0), "beta's state gauge")
	}
}

// isSubsequence reports whether got appears in want in order (want may
// have more elements).
func isSubsequence(got, want []string) bool {
	i := 0
	for _, w := range want {
		if i < len(got) && got[i] == w {
			i++
		}
	}
	return i == len(got)
}
