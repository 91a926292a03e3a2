package scenarios

import (
	"context"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
)

// wrappingCallTimeout is the gateway's backend call timeout in the
// wrapping scenarios (the "timeout" fault waits it out three times).
const wrappingCallTimeout = 750 * time.Millisecond

// wrappingFault is one way for beta to fail.
type wrappingFault struct {
	name  string
	fault fakebackends.Fault
}

func wrappingFaults() []wrappingFault {
	return []wrappingFault{
		{"crash", fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: fakebackends.CrashEOF}},
		{"403", fakebackends.Fault{Kind: fakebackends.KindHTTPStatus, Status: 403, Body: &fakebackends.FaultBody{Text: "Forbidden"}}},
		{"reset", fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: fakebackends.CrashReset}},
		{"malformed", fakebackends.Fault{Kind: fakebackends.KindMalformed, Variant: fakebackends.MalformedInvalidJSON}},
		{"timeout", fakebackends.Fault{Kind: fakebackends.KindStall, Stage: fakebackends.StageBeforeHeaders}},
	}
}

// wrappingScenarios: scenario 1, per-backend error wrapping.
func wrappingScenarios() []Scenario {
	return variants("wrapping", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "a failing backend (crash, 403, reset, malformed, timeout) is named in tools/call, resources/read and prompts/get errors; " +
				"the other backend keeps working in the same session; the session survives every backend failing; a backend's own isError passes through",
			Labels:  []string{LabelWrapping},
			Timeout: 60 * time.Second,
			Topology: func() harness.Topology {
				return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: wrappingCallTimeout,
					ClientOptions: []harness.ClientOption{harness.WithCallTimeout(wrappingCallTimeout + 5*time.Second)}}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runWrapping(ctx, env, g, v) },
		}
	})
}

func runWrapping(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	c := client(ctx, env, g, v.Revision)
	session := c.SessionID()
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before any fault")

	for _, f := range wrappingFaults() {
		must(g, env.SetFaults(ctx, beta, f.fault), "set %s on beta", f.name)

		call := c.CallTool(ctx, tool(beta, "echo"), echoArgs(f.name))
		g.Expect(call).To(matchers.BeBackendUnavailable(beta), "tools/call under %s", f.name)
		g.Expect(call).To(matchers.ReturnWithin(wrappingCallTimeout+time.Second).As("time_to_error_ms.tools_call."+f.name), "tools/call under %s", f.name)

		read := c.ReadResource(ctx, readme(beta))
		g.Expect(read).To(matchers.BeBackendUnavailable(beta), "resources/read under %s", f.name)
		g.Expect(read).To(matchers.ReturnWithin(wrappingCallTimeout+time.Second).As("time_to_error_ms.resources_read."+f.name), "resources/read under %s", f.name)

		prompt := c.GetPrompt(ctx, tool(beta, "greet"), nil)
		g.Expect(prompt).To(matchers.BeBackendUnavailable(beta), "prompts/get under %s", f.name)
		g.Expect(prompt).To(matchers.ReturnWithin(wrappingCallTimeout+time.Second).As("time_to_error_ms.prompts_get."+f.name), "prompts/get under %s", f.name)

		// The other backend works in the same session, on every method.
		expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs(f.name)), "alpha while beta fails with "+f.name)
		expectOK(g, c.ReadResource(ctx, readme(alpha)), "alpha's resource while beta fails with "+f.name)
		expectOK(g, c.GetPrompt(ctx, tool(alpha, "greet"), nil), "alpha's prompt while beta fails with "+f.name)

		must(g, env.ClearFaults(ctx, beta), "clear beta")
		expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("after "+f.name)), "beta after "+f.name+" cleared")
	}

	// Every backend failing at once: each error names its own backend, and
	// the session lives on.
	reset := fakebackends.Fault{Kind: fakebackends.KindCrash, Mode: fakebackends.CrashReset}
	must(g, env.SetFaults(ctx, alpha, reset), "reset on alpha")
	must(g, env.SetFaults(ctx, beta, reset), "reset on beta")
	for _, b := range []string{alpha, beta} {
		call := c.CallTool(ctx, tool(b, "echo"), echoArgs("all down"))
		g.Expect(call).To(matchers.BeBackendUnavailable(b), "%s with every backend down", b)
		g.Expect(call).To(matchers.ReturnWithin(time.Second).As("time_to_error_ms.all_down." + b))
	}
	must(g, env.ClearFaults(ctx, alpha), "clear alpha")
	must(g, env.ClearFaults(ctx, beta), "clear beta")
	for _, b := range []string{alpha, beta} {
		expectOK(g, c.CallTool(ctx, tool(b, "echo"), echoArgs("all back")), b+" after every backend failed")
	}
	if v.Revision == harness.RevisionLegacy {
		// A legacy session has an id, and it is the same one: the gateway
		// did not end the session. (The modern revision is stateless: no
		// id; the same client calling on is what survives.)
		g.Expect(session).NotTo(gomega.BeEmpty(), "the legacy client has a session id")
		g.Expect(c.SessionID()).To(gomega.Equal(session), "the client session survived")
	}
	names, err := c.ToolNames(ctx)
	must(g, err, "tools/list after every backend failed")
	g.Expect(names).To(gomega.ContainElements(tool(alpha, "echo"), tool(beta, "echo")))

	// A backend's own isError result passes through untouched: not
	// reported as the backend being unavailable, text unchanged. (The text
	// does not name beta: an isError naming the backend is exactly what a
	// gateway's wrapped error looks like, see BeBackendUnavailable.)
	const own = "the tool's own error: quota exceeded"
	must(g, env.SetFaults(ctx, beta, fakebackends.Fault{Kind: fakebackends.KindToolError, Text: own}), "tool_error on beta")
	call := c.CallTool(ctx, tool(beta, "echo"), echoArgs("own error"))
	g.Expect(call.Outcome).To(gomega.Equal(harness.OutcomeToolError), "a backend's own isError: %s", call.Text())
	g.Expect(call.IsError).To(gomega.BeTrue(), "isError kept")
	g.Expect(call.Text()).To(gomega.Equal(own), "the backend's text passes through unchanged")
	g.Expect(call.Meta).NotTo(gomega.HaveKey(harness.MetaErrorKind), "no gateway error _meta on the backend's own result")
	g.Expect(call).NotTo(matchers.BeBackendUnavailable(beta))
	must(g, env.ClearFaults(ctx, beta), "clear beta")
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("end")), "beta at the end")
}
