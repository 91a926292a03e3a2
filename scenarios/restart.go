package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// restartScenarios: scenario 7, backend restart and forced session expiry.
func restartScenarios() []Scenario {
	return variants("restart", AllVariants, func(v Variant) Scenario {
		return Scenario{
			Description: "a backend restart or a forced expiry of its sessions costs at most one failed call " +
				"(none for the reference gateway, which re-initializes on 404), then calls succeed",
			Labels:   []string{LabelRestart},
			Timeout:  30 * time.Second,
			Topology: twoBackendsTopology(v, 2*time.Second, 10*time.Second),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runRestart(ctx, env, g, v) },
		}
	})
}

// restartRecovery bounds beta's recovery from a restart or an expiry.
const restartRecovery = 3 * time.Second

func runRestart(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	c := k.Client(v.Revision)
	betaEcho := k.Tool(beta, "echo")
	k.CheckServes("beta answers before the restart", c, c.CallTool(ctx, betaEcho, echoArgs("before")))
	allowed := allowedFailures(env, v.Transport)

	// expired is how many sessions beta had to expire: none means the
	// gateway keeps no session open with beta, and the expiry tested
	// nothing (its checks are not applicable, with that evidence).
	expired := -1
	for _, action := range []struct {
		name string
		do   func() error
	}{
		{"restart", func() error { return env.RestartBackend(ctx, beta) }},
		{"expire", func() (err error) { expired, err = env.ExpireSessionsCount(ctx, beta); return err }},
		{"restart_again", func() error { return env.RestartBackend(ctx, beta) }},
	} {
		c = k.Steady(c, action.name)
		k.Must(action.do(), "%s beta", action.name)
		if action.name == "expire" && expired == 0 && k.Unsteady() == "" {
			why := "beta had no session to expire: the gateway keeps no session open with beta (it opens one per call, or speaks the stateless revision), so the expiry tested nothing"
			for _, check := range []string{fmt.Sprintf("expire: beta answers again (at most %d failed calls)", allowed), "expire: alpha unaffected", "expire: beta's resource answers", "expire: beta's prompt answers"} {
				k.NotApplicable(check, why)
			}
			continue
		}
		// beta recovers (its failures naming beta); once it has not, the
		// rest of the step and the later steps are inconclusive.
		k.CheckRecovery(fmt.Sprintf("%s: beta answers again (at most %d failed calls)", action.name, allowed), c, beta, restartRecovery, allowed, action.name)
		k.CheckOK(action.name+": alpha unaffected", c.CallTool(ctx, k.Tool(alpha, "echo"), echoArgs(action.name)))
		// Resources and prompts recover too.
		k.CheckOK(action.name+": beta's resource answers", c.ReadResource(ctx, k.Resource(beta, readme(beta))))
		k.CheckOK(action.name+": beta's prompt answers", c.GetPrompt(ctx, k.Prompt(beta, "greet"), nil))
	}
}
