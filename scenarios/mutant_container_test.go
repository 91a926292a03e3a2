package scenarios_test

// The container scenarios' part of the check → mutant table. Their checks
// are listed here (containerCheckNames): the reference's run of them
// needs Docker, so TestEveryCheckHasAMutant reads the list, and
// TestContainerCheckNames keeps it honest against a real run when Docker
// is there. The mutants are the gateway container (`chaos vmcp` in the
// run's image) with a changed config, or with a front proxy policy
// (mutant_front_test.go) in front of it, in this process.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
)

// The container scenario variants the rows run.
const (
	containerKillL      = "container-kill/legacy"
	containerFreezeL    = "container-freeze/legacy"
	containerPartL      = "container-partition/legacy"
	containerPartM      = "container-partition/modern"
	containerRestartL   = "container-gateway-restart/legacy"
	legacyOnlyContainer = "after gateway restart the old legacy session gets a clean error"
)

// containerCheckNames are the checks each container scenario records
// against the reference on the legacy revision; the modern one records
// the same but legacyOnlyContainer (containerChecks).
var containerCheckNames = func() map[string][]string {
	backends := []string{"alpha", "beta", "gamma"}
	each := func(format string, names []string) []string {
		var out []string
		for _, n := range names {
			out = append(out, fmt.Sprintf(format, n))
		}
		return out
	}
	recovered := func(after, who string) []string {
		return each("after "+after+" at most one failed call to %s"+who+", then full service", backends)
	}
	var kill []string
	for _, verb := range []string{"kill", "stop"} {
		kill = slices.Concat(kill, each("before the "+verb+": %s answers", backends),
			each("after "+verb+" the call in flight fails naming %s within 1s", backends[1:]),
			each("after "+verb+" the next call fails naming %s within 1s", backends[1:]),
			[]string{"after " + verb + " alpha answers while beta and gamma are down"},
			recovered("start after "+verb, ""))
	}
	var partition []string
	for _, phase := range []struct{ name, after string }{{"partition", "reconnect"}, {"re-address", "reconnect on a new address"}} {
		partition = slices.Concat(partition, each("before the "+phase.name+": %s answers", backends[1:]),
			each("before the "+phase.name+" (idle client): %s answers", backends[1:]))
		if phase.name == "partition" {
			partition = slices.Concat(partition, each("partition: a call to %[1]s ends at the call timeout naming %[1]s", backends[1:]),
				each("partition: idle keep-alive call to %s bounded by call timeout", backends[1:]),
				[]string{"partition: alpha answers during the partition"})
		}
		partition = slices.Concat(partition, recovered(phase.after, ""), recovered(phase.after, " (idle client)"))
	}
	return map[string][]string{
		"container-kill": kill,
		"container-freeze": slices.Concat(each("before the freeze: %s answers", backends[1:]),
			each("frozen backend's call ends at the call timeout naming %s", backends[1:]),
			[]string{"alpha answers while beta and gamma are frozen"}, recovered("unpause", "")),
		"container-partition": partition,
		"container-gateway-restart": slices.Concat(each("before the gateway restart: %s answers", backends),
			[]string{"after gateway restart the old session's call ends within 1s, no hang", legacyOnlyContainer,
				"after gateway restart a new session works"}),
	}
}()

// containerChecks are the checks the container scenario named name
// records against the reference (nil for a scenario that is not one).
func containerChecks(name string) []string {
	group, rev, _ := strings.Cut(name, "/")
	names := containerCheckNames[group]
	if rev == string(history.RevisionModern) {
		names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == legacyOnlyContainer })
	}
	return names
}

// containerMutantTable is the container scenarios' rows.
var containerMutantTable = []mutantRow{
	row(`^before the (kill|stop): \S+ answers$|^after (kill|stop) alpha answers while beta and gamma are down$|^after start after (kill|stop) at most one failed call to \S+, then full service$`,
		containerKillL, "refuse-echo", "every backend's echo is listed but refused"),
	// (The call in flight is timed from its container's exit as the engine
	// recorded it, not from the kill's or stop's return: under load the
	// verb returned seconds after the exit, which hid this mutant's 5 s.)
	row(`^after (kill|stop) the (call in flight|next call) fails naming (beta|gamma) within 1s$`, containerKillL, "slow-errors-5s",
		"every failure is reported 5 s late"),
	row(`^before the freeze: \S+ answers$|^alpha answers while beta and gamma are frozen$|^after unpause at most one failed call to \S+, then full service$`,
		containerFreezeL, "refuse-echo", "every backend's echo is listed but refused"),
	row(`^frozen backend's call ends at the call timeout naming (beta|gamma)$`, containerFreezeL, "no-deadline", "the call timeout is an hour"),
	row(`^before the (partition|re-address)( \(idle client\))?: \S+ answers$|^partition: alpha answers during the partition$|^after reconnect( on a new address)? at most one failed call to \S+( \(idle client\))?, then full service$`,
		containerPartL, "refuse-echo", "every backend's echo is listed but refused"),
	row(`^partition: a call to (beta|gamma) ends at the call timeout naming (beta|gamma)$`,
		containerPartM, "no-deadline", "the call timeout is an hour"),
	// The idle client's calls are not always sent on a kept-alive
	// connection: stateless calls take the pass-through hop, whose direct
	// client holds only the connections calls used (one per backend here,
	// the calls before the partition being one at a time), and the active
	// client's call, ended by its own deadline under no-deadline, closes
	// it (the 2026-07-28 revision's cancel). The idle call then dials
	// afresh and ends as the engine's DNS answers for a disconnected
	// container, "no such host" at once (gamma, measured) or not before
	// the client's deadline (beta), whatever the call timeout. A gateway
	// that reports the failure late fails them whichever way they end.
	row(`^partition: idle keep-alive call to (beta|gamma) bounded by call timeout$`,
		containerPartM, "slow-errors-5s", "every failure is reported 5 s late"),
	row(`^before the gateway restart: \S+ answers$|^after gateway restart a new session works$`, containerRestartL, "refuse-echo",
		"every backend's echo is listed but refused"),
	row(`^after gateway restart the old session's call ends within 1s, no hang$`, containerRestartL, "slow-errors",
		"every failure is reported 1.6 s late"),
	row(`^after gateway restart the old legacy session gets a clean error$`, containerRestartL, "swallow-lost-session",
		"a call in a session the gateway lost is answered with an empty success"),
}

// containerMutant is a mutant of the gateway container: its config
// template (default the reference's) and, when policy is set, a front
// proxy with that policy in front of it.
type containerMutant struct {
	template string
	policy   func() frontPolicy
	// clientTimeout, when set, bounds the clients' calls (a mutant that
	// leaves calls hanging fails its checks at this deadline, not 8 s).
	clientTimeout time.Duration
}

// containerMutants are the container rows' mutants by name.
func containerMutants() map[string]containerMutant {
	return map[string]containerMutant{
		"refuse-echo":          {policy: func() frontPolicy { return refuseEcho{} }},
		"slow-errors":          {policy: func() frontPolicy { return slowErrors{hold: 1600 * time.Millisecond} }},
		"slow-errors-5s":       {policy: func() frontPolicy { return slowErrors{hold: 5 * time.Second} }},
		"swallow-lost-session": {policy: func() frontPolicy { return swallowLostSession{} }},
		"no-deadline": {template: strings.Replace(targets.ChaosVMCPTemplate, "call: {{.CallTimeout}}", "call: 1h", 1),
			clientTimeout: mutantClientTimeout},
	}
}

// scenarioWith returns the container scenario name run against m (named
// mutant): its topology wraps m's gateway container, and m's front proxy
// around it, instead of the run's target.
func (m containerMutant) scenarioWith(t *testing.T, name, mutant string) scenarios.Scenario {
	t.Helper()
	if m.template == targets.ChaosVMCPTemplate {
		t.Fatalf("mutant %s: the template has nothing to replace", mutant)
	}
	s := scenario(t, name)
	topo := s.Topology
	s.Topology = func() harness.Topology {
		tp := topo()
		wrap := tp.WrapTarget
		tp.WrapTarget = func(targets.Target) (targets.Target, error) {
			inner, err := wrap(&containers.Gateway{TargetName: "mutant-" + mutant, Caps: targets.DefaultReferenceCapabilities,
				ConfigTemplate: cmp.Or(m.template, targets.ChaosVMCPTemplate)})
			if err != nil || m.policy == nil {
				return inner, err
			}
			return frontedContainer{Target: inner, policy: m.policy}, nil
		}
		if m.clientTimeout > 0 {
			tp.ClientOptions = append(tp.ClientOptions, history.WithCallTimeout(m.clientTimeout))
		}
		return tp
	}
	return s
}

// frontedContainer is a gateway container behind a front proxy.
type frontedContainer struct {
	targets.Target
	policy func() frontPolicy
}

func (f frontedContainer) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	gw, err := f.Target.Start(ctx, topo)
	if err != nil {
		return nil, err
	}
	rg, ok := gw.(*containers.RunningGateway)
	if !ok {
		_ = gw.Close(ctx)
		return nil, fmt.Errorf("%s: %T is not a gateway container", f.Name(), gw)
	}
	front, err := startFront(ctx, gw, f.policy(), nil)
	if err != nil {
		return nil, err
	}
	return frontedGateway{RunningGateway: rg, front: front}, nil
}

// frontedGateway is the container (its fault verbs and Restart) reached
// through the front proxy; closing it closes both.
type frontedGateway struct {
	*containers.RunningGateway
	front targets.Gateway
}

func (g frontedGateway) BaseURL() string                 { return g.front.BaseURL() }
func (g frontedGateway) MCPURL() string                  { return g.front.MCPURL() }
func (g frontedGateway) Close(ctx context.Context) error { return g.front.Close(ctx) }

// refuseEcho refuses every call of a backend's echo tool, naming the
// backend: a gateway that lists a tool it never calls.
type refuseEcho struct{ passThrough }

func (refuseEcho) before(m rpcMsg) string {
	if m.Method == "tools/call" && m.backend != "" && strings.HasSuffix(m.Params.Name, "_echo") {
		return unavailable(m.backend, "tool not served")
	}
	return ""
}

// swallowLostSession answers a call the gateway refuses for its session
// (an HTTP 4xx, as after a restart) with an empty success: a gateway that
// hides from its client that the session is gone.
type swallowLostSession struct{ passThrough }

func (swallowLostSession) lostSession(m rpcMsg) map[string]any {
	if m.Method != "tools/call" {
		return nil
	}
	return map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"content": []any{}}}
}
