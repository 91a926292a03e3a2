package scenarios

import (
	"context"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// LabelContainer labels the scenarios that run the backends and the
// gateway as containers (harness/runtimes/containers); they are skipped when no
// Docker engine answers, and fail then when VMCP_CHAOS_REQUIRE_DOCKER=1.
const LabelContainer = runner.LabelContainer

// Container scenarios: alpha (streamable HTTP, the bystander), beta (SSE)
// and gamma (streamable HTTP) run as containers on a private network with
// the gateway, which reaches them by alias. Faults go into beta and gamma
// together, so each scenario covers both backend transports; it is run on
// both client revisions.
const (
	// containerCallTimeout is the gateway's backend call timeout.
	containerCallTimeout = 1500 * time.Millisecond
	// containerClientTimeout bounds a client call: well past the gateway's
	// call timeout, so a gateway that does not bound its calls is seen.
	containerClientTimeout = 8 * time.Second
	// containerFailFast is how soon a call must fail naming the backend
	// once its container is killed or stopped.
	containerFailFast = time.Second
	// containerTimeoutSlack is how long past the call timeout a call to a
	// frozen or partitioned backend may take (a loaded machine).
	containerTimeoutSlack = 1500 * time.Millisecond
	// containerRecovery bounds the calls after an undo: at most one failed.
	containerRecoveryCalls = 2
)

// ContainerCallBound is the longest a call to a frozen or partitioned
// backend container may take in the container scenarios: the gateway's
// call timeout plus slack for a loaded machine.
const ContainerCallBound = containerCallTimeout + containerTimeoutSlack

// gamma is the second faulty backend of the container scenarios.
const gamma = kit.Gamma

var containerFaulty = []string{beta, gamma}

// containerScenarios is the container group on both revisions.
func containerScenarios() []Scenario {
	var out []Scenario
	add := func(group, desc string, run func(k *kit.Kit, rev history.Revision)) {
		for _, rev := range []history.Revision{history.RevisionLegacy, history.RevisionModern} {
			out = append(out, Scenario{
				Name: group + "/" + string(rev), Group: group, Description: desc,
				Labels:   []string{LabelContainer, group, string(rev), string(fakebackends.TransportStreamableHTTP), string(fakebackends.TransportSSE)},
				Timeout:  3 * time.Minute,
				Topology: containerTopology,
				Run: func(ctx context.Context, env *harness.Env, g gomega.Gomega) {
					run(kit.New(ctx, env, g), rev)
				},
			})
		}
	}
	add("container-kill", "SIGKILL, then a graceful stop, of backend containers: each time the call in flight and the next call fail naming the backend within 1 s; after each start, at most one failed call, then full service", runContainerKillStop)
	add("container-freeze", "paused (frozen) backend containers: calls end at the call timeout naming the backend; after unpause, at most one failed call", runContainerFreeze)
	add("container-partition", "backend containers off the network: every call, one on an idle keep-alive connection too, ends at the call timeout naming the backend; after reconnect, at most one failed call; then off again and back on a new address: at most one failed call, then full service", runContainerPartition)
	add("container-gateway-restart", "restart of the gateway container: the old session gets a clean error at once, a new session works", runContainerGatewayRestart)
	return out
}

// containerTopology: three backends and the gateway, as containers.
func containerTopology() harness.Topology {
	ct := containers.NewTopology()
	return harness.Topology{
		Backends: []harness.BackendSpec{
			{Script: script(alpha, fakebackends.TransportStreamableHTTP), Runtime: ct},
			{Script: script(beta, fakebackends.TransportSSE), Runtime: ct},
			{Script: script(gamma, fakebackends.TransportStreamableHTTP), Runtime: ct},
		},
		WrapTarget:         ct.WrapTarget,
		GatewayCallTimeout: containerCallTimeout,
		ClientOptions:      []history.ClientOption{history.WithCallTimeout(containerClientTimeout)},
	}
}
