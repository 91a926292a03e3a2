package scenarios

import (
	"context"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// Backend names used by the scenarios: alpha is the healthy bystander,
// beta the backend faults go into.
const (
	alpha = kit.Alpha
	beta  = kit.Beta
)

// Shorthands of the kit used throughout the catalogue.
var (
	script   = kit.Script
	readme   = kit.Readme
	echoArgs = kit.EchoArgs
	onCall   = kit.OnCall
	ms       = kit.Ms
	sleep    = kit.Sleep
)

// healthOf reads backend's state from the health API; when that fails,
// its State and Breaker say why ("error: ...").
func healthOf(ctx context.Context, env *harness.Env, backend string) harness.BackendState {
	states, err := env.HealthStates(ctx)
	if err != nil {
		return harness.BackendState{State: "error: " + err.Error(), Breaker: "error: " + err.Error()}
	}
	return states[backend]
}

// twoBackends is alpha (streamable HTTP) and beta on the variant's
// transport, both in-process.
func twoBackends(v Variant) []harness.BackendSpec { return kit.TwoBackends(v.Transport) }

// twoBackendsTopology is twoBackends behind a gateway whose backend call
// timeout is callTimeout, with clients whose own deadline is clientTimeout.
func twoBackendsTopology(v Variant, callTimeout, clientTimeout time.Duration) func() harness.Topology {
	return func() harness.Topology {
		return harness.Topology{Backends: twoBackends(v), GatewayCallTimeout: callTimeout,
			ClientOptions: []harness.ClientOption{harness.WithCallTimeout(clientTimeout)}}
	}
}
