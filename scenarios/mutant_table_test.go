package scenarios_test

// The check → mutant table: every named check of the catalogue, and the
// mutant gateway that fails it. A check no gateway can fail is a defect:
// TestEveryCheckHasAMutant (mutant_table_run_test.go) fails naming every
// check no row covers, and TestMutantTable runs each row's mutant through
// its scenario and fails unless every check the row covers FAILS there
// (not inconclusive, not not-applicable).
//
// The mutants are the reference gateway with one defect each, all in
// process: a Configure hook (its config changed), or a proxy in front of
// it with one policy (mutant_front_test.go; the policies in
// mutant_policies_test.go, mutant_state_test.go and
// mutant_optimizer_test.go: it answers some calls itself, holds failures
// back, rewrites answers or the admin API), with, for the restart mutants,
// a proxy between the gateway and beta (mutant_back_test.go). Fixture h's and e's defects
// (a session's backend client never rebuilt, a wrong-id answer taken) are
// policies here too: no gateway binary to build.

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// mutantRow is one row of the table: the checks named by checks, judged
// in scenario, fail against the mutant named mutant, because of why.
type mutantRow struct {
	checks   *regexp.Regexp
	scenario string
	mutant   string
	why      string
	// failureOnly: the checks are recorded only when they fail (the kit's
	// "the session recovers from <step>", a topology that does not
	// start): no run of the reference names them, so the row asserts that
	// at least one matching check failed.
	failureOnly bool
	// beyondReference: the reference never judges the checks (they are
	// not applicable to a gateway that keeps its backend sessions open,
	// as the initialize path's): the row's mutant is a fixture that
	// judges them, and every matching check it records must fail, at
	// least one.
	beyondReference bool
}

// The scenario variants the rows run.
const (
	wrappingSH   = "wrapping/legacy/streamable-http"
	hangSH       = "hang/legacy/streamable-http"
	hangSSE      = "hang/legacy/sse"
	hangCancelSH = "hang-cancel/legacy/streamable-http"
	hangKillSH   = "hang-kill/legacy/streamable-http"
	hangKillSSE  = "hang-kill/legacy/sse"
	hangPauseSH  = "hang-pause/legacy/streamable-http"
	sessionSH    = "session/legacy/streamable-http"
	restartSH    = "restart/legacy/streamable-http"
	loadSH       = "load/legacy/streamable-http"
	breakerSH    = "breaker/legacy/streamable-http"
	keepaliveSH  = "keepalive/legacy/streamable-http"
	optimizerSH  = "optimizer/legacy/streamable-http"
	optimizerMSH = "optimizer/modern/streamable-http"
	healthSH     = "health/legacy/streamable-http"
	revisionsLSH = "revisions/legacy/streamable-http"
	revisionsMSH = "revisions/modern/streamable-http"
)

func row(checks, scenario, mutant, why string) mutantRow {
	return mutantRow{checks: regexp.MustCompile(checks), scenario: scenario, mutant: mutant, why: why}
}

// mutantTable is the table, by scenario group.
var mutantTable = []mutantRow{
	// wrapping
	row(`^\S+: (tools/call|resources/read|prompts/get) names beta$|^all down: (alpha|beta)'s error names (alpha|beta) within 1 s$`, wrappingSH, "no-wrapping",
		"errors carry no backend name"),
	row(`^\S+: (tools/call|resources/read|prompts/get) fails within call timeout \+ 1 s$`, wrappingSH, "swallow-errors",
		"beta's failed calls are answered with an empty success: the call does not fail"),
	// The initialize path: judged on a gateway that opens a backend
	// session per call (fixture i), not applicable on the reference.
	row(`^\S+ on initialize: tools/call names beta$`, wrappingSH, "fixture-i-init-unnamed",
		"fixture i with its initialize errors passed through naming no backend").beyondReferenceRow(),
	row(`^\S+ on initialize: tools/call fails within call timeout \+ 1 s$`, wrappingSH, "fixture-i-init-retry",
		"fixture i retrying a failed initialize for as long as the client waits").beyondReferenceRow(),
	row(`: alpha unaffected \(tools, resources, prompts\)$`, wrappingSH, "blast-radius", "alpha's calls fail while beta fails"),
	row(`: beta answers once cleared( \(after (resources/read|prompts/get)\))?$|^all back: (alpha|beta) answers once every backend is cleared$|^beta answers at the end$`,
		wrappingSH, "sticky-failure", "a failed backend's next three calls fail too"),
	row(`: the forged answer never reaches the client$`, wrappingSH, "takes-forged-answer", "beta's answer with another request's id is taken as the call's"),
	row(`^tools/list lists both backends after every backend failed$`, wrappingSH, "forgets-failed-tools", "beta's tools leave tools/list once a call of beta failed"),
	row(`^the session survives every backend failing$`, wrappingSH, "ends-session-when-all-down", "a session ends once none of its backends answered"),
	row(`^beta's own isError passes through unchanged$`, wrappingSH, "wrap-tool-errors", "beta's own isError result becomes the gateway's error naming beta"),

	// hang
	row(`: fails within (1 s|call timeout \+ 1 s)$`, hangSH, "slow-errors", "every failure is reported 1.6 s late"),
	row(`^truncate: the error names beta$`, hangSH, "no-wrapping", "errors carry no backend name"),
	row(`: alpha unaffected$`, hangSH, "blast-radius", "alpha's calls fail while beta fails"),
	row(`: beta answers once cleared \(at most 0 failed calls\)$`, hangSH, "sticky-failure", "a failed backend's next three calls fail too"),
	row(`: beta answers once cleared \(at most 1 failed calls\)$`, hangSSE, "sticky-failure", "a failed backend's next three calls fail too"),
	row(`^the session recovers from `, sessionSH, "broken-session", "a session's backend client is never rebuilt after a failed call (fixture h's defect)").failureOnlyRow(),

	// Checks any scenario records when it cannot run.
	row(`^topology starts$`, hangCancelSH, "no-start", "the gateway exits as it starts").failureOnlyRow(),
	row(`^scenario ran to the end \(aborted at `, optimizerSH, "one-session", "the gateway refuses a second client session").failureOnlyRow(),
	row(`^no goroutine leaked$`, hangCancelSH, "leaks-goroutine", "the gateway leaves a goroutine of the run running after its Close").failureOnlyRow(),
	row(`^teardown within its deadline$`, hangCancelSH, "slow-teardown", "the gateway's Close takes 4 s, past the run's 2 s teardown deadline").failureOnlyRow(),

	// hang-cancel
	row(`^beta answers before any fault$`, hangCancelSH, "cold-start", "beta's first call in a session fails"),
	row(`^the slow call reaches beta$`, hangCancelSH, "refuse-slow-tool", "beta's slow tool is listed but never called"),
	row(`^beta's stalled call ends within 3 s of the cancel$|^beta \(a legacy backend session\) receives notifications/cancelled for the stalled call within 3 s of the cancel$`, hangCancelSH, "no-cancel",
		"the client's cancellation never reaches the gateway: its call to beta goes on, notifications/cancelled is dropped"),
	row(`^beta's stalled call ends within 3 s of the cancel$|^beta \(a legacy backend session\) receives notifications/cancelled for the stalled call within 3 s of the cancel$`, hangCancelSH, "fixture-n",
		"the client's cancellation reaches the gateway 1 time in 8: judged over trials, not on one lucky sample"),
	row(`^beta answers after the cancel$`, hangCancelSH, "sticky-failure", "a backend's next three calls fail after a call of it was abandoned"),

	// hang-kill
	row(`^beta answers before the kill$`, hangKillSH, "cold-start", "beta's first call in a session fails"),
	row(`^the call in flight at the SIGKILL fails within 1 s$|^the next call to the killed backend fails within 1 s$`, hangKillSH, "slow-errors", "every failure is reported 1.6 s late"),
	row(`^alpha answers while beta is dead$`, hangKillSH, "blast-radius", "alpha's calls fail while beta fails"),
	row(`^beta answers after the respawn \(at most 0 failed calls\)$`, hangKillSH, "sticky-failure", "a failed backend's next three calls fail too"),
	row(`^beta answers after the respawn \(at most 1 failed calls\)$`, hangKillSSE, "sticky-failure", "a failed backend's next three calls fail too"),

	// hang-pause
	row(`^beta answers before the pause$`, hangPauseSH, "cold-start", "beta's first call in a session fails"),
	row(`^the call in flight at the SIGSTOP fails within call timeout \+ 1 s$|^the next call to the stopped backend fails within call timeout \+ 1 s$`, hangPauseSH, "no-deadline",
		"the call timeout is an hour"),
	row(`^alpha answers within 1 s while beta is stopped$`, hangPauseSH, "blast-radius", "alpha's calls fail while beta fails"),
	row(`^beta answers after SIGCONT \(at most 1 failed call\)$`, hangPauseSH, "sticky-failure", "a failed backend's next three calls fail too"),

	// session
	row(`: the call fails$|^the stalled call fails$`, sessionSH, "swallow-errors", "beta's failed calls are answered with an empty success"),
	row(`: beta answers once cleared$|^beta answers once the stall is cleared$`, sessionSH, "sticky-failure", "a failed backend's next three calls fail too"),
	row(`^a stalled call does not block beta's other calls in the session$`, sessionSH, "busy-backend", "a call of beta is refused while another is in flight"),
	row(`^a stalled call does not block beta's other calls in the session$`, sessionSH, "queue-backend", "calls of beta one at a time: the second reaches beta only when the stalled one ended (a deterministic finding, not a slow machine)"),
	row(`^alpha answers while beta's slow call stalls$`, sessionSH, "blast-radius", "alpha's calls fail while a call of beta is in flight"),
	row(`^beta's slow answers after the stall cleared$`, sessionSH, "sticky-tool", "a tool's next call fails after a call of it failed"),
	row(`^both backends connected at the start$|: the session reports beta error with its lastError$|: the next success clears beta's error$|^no backend state is stuck after the stall$|^beta connected at the end$`,
		sessionSH, "health-stuck-closed", "the session API reports every backend busy, whatever happened"),

	// restart
	row(`^beta answers before the restart$`, restartSH, "cold-start", "beta's first call in a session fails"),
	// (On SSE a restart or an expiry shows to a proxy only after the
	// gateway's next call: the variant's "at most 1 failed calls" is the
	// same check with the SSE variant's bound.)
	row(`: beta answers again \(at most \d failed calls\)$`, restartSH, "restart-slow", "beta's next two calls fail once it lost its session: two failed calls"),
	row(`: alpha unaffected$`, restartSH, "restart-alpha", "alpha's next call fails after beta lost its session"),
	row(`: beta's (resource|prompt) answers$`, restartSH, "restart-resources", "beta's next resource read and prompt get fail after it lost its session"),

	// load
	row(`^no call hangs until the client's deadline$|^no call takes longer than half the client's deadline$`, loadSH, "slow-errors-11s", "every failure is reported 11 s late"),
	row(`^alpha never fails while beta crashes$`, loadSH, "blast-radius", "alpha's calls fail while beta fails or has a call in flight"),
	row(`^beta's failures name beta$`, loadSH, "no-wrapping", "errors carry no backend name"),
	row(`^every session reaches beta after the last recovery$`, loadSH, "sticky-failure", "a failed backend's next three calls fail too"),

	// breaker
	row(`^failing call \d names beta$|^while open, calls fail fast naming beta$`, breakerSH, "no-wrapping", "errors carry no backend name"),
	row(`^the circuit opens after 3 failed calls$`, breakerSH, "no-breaker", "the breaker never opens"),
	row(`^the circuit opens after 3 failed calls$`, breakerSH, "fixture-l", "a declared breaker switched off in its config, its health API still saying closed"),
	// Judged once the circuit was seen open: a health API that reports it
	// open while calls still reach beta fails it.
	row(`^while open, calls do not reach beta$`, breakerSH, "open-but-admits", "the health API reports beta's circuit open while the breaker admits every call"),
	row(`^alpha unaffected while beta's circuit is open$`, breakerSH, "blast-radius", "alpha's calls fail while beta fails"),
	row(`^the trial call in half-open succeeds$|^beta's tools and resources work after its circuit closed$`, breakerSH, "never-half-open", "the circuit stays open an hour"),
	row(`^health API: the circuit goes half-open after the open timeout$|^health API: the poller saw closed, open, \(half-open,\) closed$`, breakerSH, "health-stuck-closed",
		"the health API reports every circuit closed"),
	row(`^health API: beta's circuit is closed at the start$|^health API: the circuit closes after a successful trial$`, breakerSH, "health-stuck-open",
		"the health API reports every circuit open"),
	row(`^metrics: circuit transition counters match the transitions$`, breakerSH, "overcount-metrics", "every counter reads one more than counted"),

	// keepalive
	row(`^beta answers at the start$`, keepaliveSH, "cold-start", "beta's first call in a session fails"),
	row(`^beta's session is pinged every interval ± jitter$|^probes resume at the interval after re-enabling$`, keepaliveSH, "keepalive-slow-interval",
		"beta is pinged every 3 s, not every 300 ms"),
	row(`^beta's session is pinged every interval ± jitter$`, keepaliveSH, "keepalive-fast-interval", "beta is pinged every 200 ms, not every 300 ms"),
	row(`^keepalive stops after exactly 2 failed probes$|^no probe while keepalive is disabled$`, keepaliveSH, "keepalive-max-failures-4",
		"keepalive disables itself after 4 failed probes, not 2"),
	row(`^the re-probe comes probeAfter after the last failed probe$`, keepaliveSH, "keepalive-no-reprobe", "the re-probe comes an hour later"),
	row(`^health API: beta's keepalive enabled, one session$|^health API: keepalive disabled after the failed probes, consecutiveFailures = 2$|^health API: keepalive enabled again after the re-probe$`,
		keepaliveSH, "health-stuck-closed", "the health API reports keepalive off with no failures, whatever happened"),
	row(`^beta's tools work while its keepalive is disabled$`, keepaliveSH, "keepalive-gate", "beta's calls fail while its keepalive is disabled"),
	row(`^metrics: keepalive counters match the pings beta received$`, keepaliveSH, "overcount-metrics", "every counter reads one more than counted"),

	// optimizer
	row(`^health API: beta's circuit open after its failed calls$`, optimizerSH, "health-stuck-closed", "the health API reports every circuit closed"),
	row(`^beta's circuit opens: a call of beta's echo then fails without reaching beta$`, optimizerSH, "open-but-admits",
		"the health API reports beta's circuit open, but the gateway has no breaker: the next call still reaches beta"),
	row(`^case 1: tools/list shows only the optimizer's tools$`, optimizerSH, "lists-backend-tools", "tools/list lists alpha's echo beside find_tool and call_tool"),
	row(`find_tool never returns beta's tools$|^case 4: with every backend unhealthy find_tool finds nothing and says no backend$`, optimizerSH, "finds-beta",
		"find_tool returns beta's echo whatever beta's health"),
	row(`^case 1: call_tool of beta's tool fails within 1 s naming the tool$|^case 4: call_tool while beta dies fails naming beta within 1 s$|^case 4: call_tool in an older session with alpha down names alpha within 1 s$`,
		optimizerSH, "anonymous-call-tool", "call_tool's errors name neither the tool nor the backend"),
	row(`^case 2: alpha's echo is found first, with token metrics$`, optimizerSH, "no-token-metrics", "find_tool reports no token metrics"),
	row(`^case 2: call_tool calls alpha's echo$`, optimizerSH, "call-tool-skips-alpha", "call_tool never routes to alpha"),
	row(`^case 3: a new session finds beta's echo first after recovery$`, optimizerSH, "forgets-beta", "find_tool never returns beta's tools once a call of beta failed"),
	row(`^case 3: a stateless client's request after recovery finds beta$`, optimizerMSH, "forgets-beta", "find_tool never returns beta's tools once a call of beta failed"),
	row(`^case 3: call_tool calls beta's echo after recovery$`, optimizerSH, "stale-exclusion", "call_tool refuses beta for good once its circuit refused a call"),
	row(`^health API: beta healthy, its circuit closed again after recovery$`, optimizerSH, "health-stuck-once-open", "the health API reports beta's circuit open for good once it opened"),
	row(`^health API: both backends unhealthy when every request fails$`, optimizerSH, "health-never-unhealthy", "the health API reports an unhealthy backend degraded"),
	row(`^case 4: a session opens within 2 s with every backend unhealthy$`, optimizerSH, "slow-initialize", "initialize is answered 2.5 s late once every backend is unhealthy"),
	row(`^case 4: call_tool with every backend unhealthy fails within 1 s$|^case 4: call_tool in an older session with alpha down names alpha within 1 s$`, optimizerSH, "slow-alpha-errors",
		"alpha's failures are reported 1.5 s late"),
	row(`^case 4: call_tool from a stateless client with alpha down fails within 1 s$`, optimizerMSH, "slow-alpha-errors",
		"alpha's failures are reported 1.5 s late"),
	row(`^case 4: find_tool still answers in the older session$`, optimizerSH, "find-fails-after-alpha", "find_tool fails once a call of alpha failed"),

	// health: the health API tells the truth (issue 41)
	row(`^beta answers before any fault$`, healthSH, "cold-start", "beta's first call in a session fails"),
	row(`^health API: beta is not reported serving while it is down$`, healthSH, "fixture-r",
		"a health API that reports every backend healthy, whatever the gateway knows (fixture r)"),
	row(`^health API: beta is not reported serving while it is down$`, healthSH, "health-stuck-closed", "the health API reports every backend healthy"),
	row(`^health API: beta is reported serving again once it is back$`, healthSH, "health-stuck-once-down",
		"the health API reports beta unhealthy for good once it was"),

	// revisions: every protocol revision the gateway advertises is served
	row(`^the advertised revision 2026-07-28 is served: `, revisionsMSH, "fixture-s",
		"every 2026-07-28 request answered -32022 while server/discover lists 2026-07-28 (fixture s)"),
	row(`^the advertised revision 2025-11-25 is served: `, revisionsLSH, "fixture-s-legacy",
		"every 2025-11-25 request answered -32022 while server/discover lists 2025-11-25"),
}

func (r mutantRow) failureOnlyRow() mutantRow {
	r.failureOnly = true
	return r
}

// beyondReferenceRow marks r as judged by a fixture only (see
// mutantRow.beyondReference).
func (r mutantRow) beyondReferenceRow() mutantRow {
	r.beyondReference = true
	return r
}

// fixtureMutants are the table's fixture gateways: a fixture profile
// (testdata/profiles/<profile>.yaml) with, for fixture i's broken
// variants, one more fixturegw flag each. Issue 40's fixtures are here
// as the gateways whose defect a check once missed: fixture l's breaker
// never opens, fixture n forwards a cancel 1 time in 8. Issue 41's:
// fixture r's health API lies, fixture s refuses the newest revision it
// advertises (fixture-s-legacy: 2025-11-25 instead).
var fixtureMutants = map[string]struct{ profile, flag string }{
	"fixture-i-init-unnamed": {"fixture-i", "--init-unnamed"},
	"fixture-i-init-retry":   {"fixture-i", "--init-retry"},
	"fixture-l":              {"fixture-l", ""},
	"fixture-n":              {"fixture-n", ""},
	"fixture-r":              {"fixture-r", ""},
	"fixture-s":              {"fixture-s", ""},
	"fixture-s-legacy":       {"fixture-s-legacy", ""},
}

// fixtureMutantTargets builds fixturegw (once, for the test) and returns
// fixtureMutants as exec targets.
func fixtureMutantTargets(t *testing.T) map[string]targets.Target {
	t.Helper()
	buildFixtureGW(t)
	out := map[string]targets.Target{}
	for name, m := range fixtureMutants {
		e := fixtureTarget(t, m.profile)
		e.TargetName = name
		if m.flag != "" {
			e.Command = append(slices.Clone(e.Command), m.flag)
		}
		out[name] = e
	}
	return out
}

// mutantTargets are the table's mutants by name, all in process.
func mutantTargets() map[string]targets.Target {
	configured := func(name string, configure func(*vmcp.Config)) targets.Target {
		return targets.Reference{TargetName: "mutant-" + name, Configure: configure}
	}
	betaKeepalive := func(name string, set func(*config.Keepalive)) targets.Target {
		return configured(name, func(cfg *vmcp.Config) {
			for i := range cfg.Backends {
				if cfg.Backends[i].Name == "beta" {
					set(&cfg.Backends[i].Keepalive)
				}
			}
		})
	}
	out := map[string]targets.Target{
		"no-wrapping":              &stripNamesTarget{inner: targets.Reference{TargetName: "mutant-no-wrapping"}},
		"no-deadline":              configured("no-deadline", func(cfg *vmcp.Config) { cfg.Timeouts.Call = time.Hour }),
		"no-breaker":               configured("no-breaker", func(cfg *vmcp.Config) { cfg.Breaker.Enabled = false }),
		"never-half-open":          configured("never-half-open", func(cfg *vmcp.Config) { cfg.Breaker.OpenTimeout = time.Hour }),
		"keepalive-slow-interval":  betaKeepalive("keepalive-slow-interval", func(ka *config.Keepalive) { ka.Interval = 3 * time.Second }),
		"keepalive-fast-interval":  betaKeepalive("keepalive-fast-interval", func(ka *config.Keepalive) { ka.Interval = 200 * time.Millisecond }),
		"keepalive-max-failures-4": betaKeepalive("keepalive-max-failures-4", func(ka *config.Keepalive) { ka.MaxFailures = 4 }),
		"no-start":                 noStart{targets.Reference{TargetName: "mutant-no-start"}},
		"leaks-goroutine":          leaksGoroutine{targets.Reference{TargetName: "mutant-leaks-goroutine"}},
		"slow-teardown":            slowTeardown{targets.Reference{TargetName: "mutant-slow-teardown"}},
		"keepalive-no-reprobe":     betaKeepalive("keepalive-no-reprobe", func(ka *config.Keepalive) { ka.ProbeAfter = time.Hour }),
	}
	for name, policy := range map[string]func() frontPolicy{
		"slow-errors":                func() frontPolicy { return slowErrors{hold: 1600 * time.Millisecond} },
		"slow-errors-11s":            func() frontPolicy { return slowErrors{hold: 11 * time.Second} },
		"swallow-errors":             func() frontPolicy { return swallowErrors{} },
		"sticky-failure":             func() frontPolicy { return &stickyFailure{n: 3} },
		"takes-forged-answer":        func() frontPolicy { return takesForgedAnswer{} },
		"broken-session":             func() frontPolicy { return &brokenSession{} },
		"ends-session-when-all-down": func() frontPolicy { return &endsSessionWhenAllDown{} },
		"one-session":                func() frontPolicy { return &refuseSecondSession{} },
		"keepalive-gate":             func() frontPolicy { return &keepaliveGate{} },
		"sticky-tool":                func() frontPolicy { return &stickyFailure{n: 1, perTool: true} },
		"blast-radius":               func() frontPolicy { return &blastRadius{} },
		"cold-start":                 func() frontPolicy { return &coldStart{} },
		"wrap-tool-errors":           func() frontPolicy { return wrapToolErrors{} },
		"forgets-failed-tools":       func() frontPolicy { return &forgetsFailedTools{} },
		"refuse-slow-tool":           func() frontPolicy { return refuseTool{tool: "slow"} },
		"no-cancel":                  func() frontPolicy { return noCancel{} },
		"busy-backend":               func() frontPolicy { return &busyBackend{} },
		"queue-backend":              func() frontPolicy { return &queueBackend{turn: make(chan struct{}, 1)} },
		"health-stuck-closed":        func() frontPolicy { return stuckHealth{circuit: "closed"} },
		"health-stuck-open":          func() frontPolicy { return stuckHealth{circuit: "open"} },
		"overcount-metrics":          func() frontPolicy { return overcountMetrics{} },
		// The optimizer's (mutant_optimizer_test.go).
		"slow-alpha-errors":      func() frontPolicy { return slowErrors{hold: 1500 * time.Millisecond, backend: "alpha"} },
		"finds-beta":             func() frontPolicy { return findsBeta{} },
		"forgets-beta":           func() frontPolicy { return &forgetsBeta{} },
		"no-token-metrics":       func() frontPolicy { return noTokenMetrics{} },
		"lists-backend-tools":    func() frontPolicy { return listsBackendTools{} },
		"anonymous-call-tool":    func() frontPolicy { return anonymousCallTool{} },
		"call-tool-skips-alpha":  func() frontPolicy { return refuseViaCallTool{backend: "alpha"} },
		"stale-exclusion":        func() frontPolicy { return &staleExclusion{} },
		"find-fails-after-alpha": func() frontPolicy { return &findFailsAfterAlpha{} },
		"slow-initialize":        func() frontPolicy { return &slowInitialize{hold: 2500 * time.Millisecond} },
		"health-stuck-once-open": stuckOnceOpen,
		"health-never-unhealthy": neverUnhealthy,
		"health-stuck-once-down": stuckOnceDown,
	} {
		out[name] = &mutantTarget{name: "mutant-" + name, policy: policy}
	}
	out["open-but-admits"] = &mutantTarget{name: "mutant-open-but-admits", policy: func() frontPolicy { return stuckHealth{circuit: "open"} },
		inner: targets.Reference{Configure: func(cfg *vmcp.Config) { cfg.Breaker.Enabled = false }}}
	for name, policy := range map[string]func() frontPolicy{
		"restart-slow":      func() frontPolicy { return &afterSessionLoss{mode: "slow"} },
		"restart-alpha":     func() frontPolicy { return &afterSessionLoss{mode: "alpha"} },
		"restart-resources": func() frontPolicy { return &afterSessionLoss{mode: "resources"} },
	} {
		out[name] = &mutantTarget{name: "mutant-" + name, policy: policy, back: true}
	}
	return out
}
