package scenarios

import (
	"context"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// restartScenarios: scenario 7, backend restart and forced session expiry.
func restartScenarios() []Scenario {
	return variants("restart", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "a backend restart or a forced expiry of its sessions costs at most one failed call " +
				"(none for the reference gateway, which re-initializes on 404), then calls succeed",
			Labels:  []string{LabelRestart},
			Timeout: 30 * time.Second,
			Topology: func() harness.Topology {
				return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: 2 * time.Second,
					ClientOptions: []harness.ClientOption{harness.WithCallTimeout(10 * time.Second)}}
			},
			Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runRestart(ctx, env, g, v) },
		}
	})
}

func runRestart(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	c := client(ctx, env, g, v.Revision)
	expectOK(g, c.CallTool(ctx, tool(beta, "echo"), echoArgs("before")), "beta before the restart")
	allowed := allowedFailures(env, v.Transport)

	for round, action := range []struct {
		name string
		do   func() error
	}{
		{"restart", func() error { return env.RestartBackend(ctx, beta) }},
		{"expire", func() error { return env.ExpireSessions(ctx, beta) }},
		{"restart_again", func() error { return env.RestartBackend(ctx, beta) }},
	} {
		must(g, action.do(), "%s beta", action.name)
		start := time.Now()
		failed := callsUntilOK(ctx, g, c, tool(beta, "echo"), 3)
		env.Recorder().SetFigure("failed_calls_after_"+action.name, float64(failed))
		env.Recorder().SetFigure("recovery_ms."+action.name, ms(time.Since(start)))
		g.Expect(failed).To(gomega.BeNumerically("<=", allowed), "round %d: failed calls after %s of beta", round, action.name)
		expectOK(g, c.CallTool(ctx, tool(alpha, "echo"), echoArgs(action.name)), "alpha after beta's "+action.name)
		// Resources and prompts recover too.
		expectOK(g, c.ReadResource(ctx, readme(beta)), "beta's resource after "+action.name)
		expectOK(g, c.GetPrompt(ctx, tool(beta, "greet"), nil), "beta's prompt after "+action.name)
	}
}
