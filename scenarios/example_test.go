package scenarios_test

import (
	"context"
	"fmt"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/matchers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// Writing a scenario (the snippet of scenarios/README.md): a topology of
// the fixture backends, a body that makes a Kit, sets a fault and judges
// named checks. Run it with runner.Run (as the suite and `chaos run`
// do; here against the reference gateway) and read its checks.
func Example_writingAScenario() {
	sc := scenarios.Scenario{
		Name: "mine/legacy/streamable-http", Group: "mine", Labels: []string{"mine", scenarios.LabelWrapping},
		Timeout: 30 * time.Second,
		Topology: func() harness.Topology {
			return harness.Topology{Backends: kit.TwoBackends(fakebackends.TransportStreamableHTTP), GatewayCallTimeout: 500 * time.Millisecond}
		},
		Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) {
			k := kit.New(ctx, env, g)
			c := k.Client(history.RevisionLegacy) // ends the scenario if it cannot connect
			k.SetFaults(kit.Beta, kit.OnCall(faults.Fault{Kind: faults.KindHTTPStatus, Params: &faults.HTTPStatus{Status: 403}}))

			// k.Tool finds beta's echo under whatever name the gateway gives it.
			call := c.CallTool(ctx, k.Tool(kit.Beta, "echo"), kit.EchoArgs("hi"))
			k.CheckCall("403 names beta", call, matchers.BeBackendUnavailable(kit.Beta))
			k.CheckCall("403 fails within 1 s", call, matchers.FailWithin(time.Second).As("time_to_error_ms.403"))
			k.CheckOK("alpha unaffected", c.CallTool(ctx, k.Tool(kit.Alpha, "echo"), kit.EchoArgs("hi")))
			// A check needing a capability the target lacks is recorded
			// not_applicable, with the reason.
			k.CheckIf([]targets.Capability{targets.CapHealthAPI}, "the health API lists beta", func(ck *kit.C) {
				states, err := env.HealthStates(ctx)
				ck.Expect(err).NotTo(gomega.HaveOccurred())
				ck.Expect(states).To(gomega.HaveKey(kit.Beta))
			})
		},
	}
	res := runner.Run(context.Background(), sc, runner.RunConfig{Target: targets.Reference{}}).Result()
	fmt.Println(res.Verdict)
	for _, c := range res.Checks {
		fmt.Println(c.Verdict, c.Name)
	}
	// Output:
	// passed
	// passed 403 names beta
	// passed 403 fails within 1 s
	// passed alpha unaffected
	// passed the health API lists beta
}
