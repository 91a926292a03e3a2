package scenarios

import (
	"context"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
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
func healthOf(ctx context.Context, env *harness.Env, backend string) targets.BackendState {
	states, err := env.HealthStates(ctx)
	if err != nil {
		return targets.BackendState{State: "error: " + err.Error(), Breaker: "error: " + err.Error()}
	}
	return states[backend]
}

// twoBackendsTopology is alpha (streamable HTTP) and beta on the
// variant's transport, both in-process, behind a gateway whose backend
// call timeout is callTimeout, with clients whose own deadline is
// clientTimeout; each of with then adds the scenario's own settings.
func twoBackendsTopology(v Variant, callTimeout, clientTimeout time.Duration, with ...func(*harness.Topology)) func() harness.Topology {
	return func() harness.Topology {
		t := harness.Topology{Backends: kit.TwoBackends(v.Transport), GatewayCallTimeout: callTimeout,
			ClientOptions: []history.ClientOption{history.WithCallTimeout(clientTimeout)}}
		for _, f := range with {
			f(&t)
		}
		return t
	}
}
