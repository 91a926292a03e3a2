package scenarios_test

// Issue 40's and 41's fixtures: gateways built to catch a false verdict of
// the catalogue, each the reference behind fixturegw with one real
// gateway's behaviour (testdata/profiles/fixture-j.yaml … fixture-s.yaml;
// q is a gateway of its own). Each subtest holds the verdicts a correct
// harness gives it.

import (
	"context"
	"strings"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

// wantCheck fails t unless res's check name has verdict want and says
// words (in its reason, or what it observed).
func wantCheck(t *testing.T, res history.ScenarioResult, name string, want history.CheckVerdict, words string) {
	t.Helper()
	c := checkOf(res, name)
	if c.Verdict != want || !strings.Contains(c.Reason+" "+c.Observed, words) {
		t.Errorf("%q: %s (%s%s), want %s: %s", name, c.Verdict, c.Reason, c.Observed, want, words)
	}
}

// checkOf returns the named check of res (a zero Check when absent).
func checkOf(res history.ScenarioResult, name string) history.Check {
	for _, c := range res.Checks {
		if c.Name == name {
			return c
		}
	}
	return history.Check{}
}

func TestTruthFixtures(t *testing.T) {
	t.Parallel()
	buildFixtureGW(t)

	// (j) tools only: no resources, no prompts, anywhere. Nothing fails;
	// the resource and prompt checks are not applicable, wherever the
	// scenario calls them (restart's and the breaker's ask no guard).
	t.Run("j tools only", func(t *testing.T) {
		t.Parallel()
		names := []string{"restart/legacy/streamable-http", "breaker/legacy/streamable-http", "wrapping/legacy/streamable-http", "session/legacy/streamable-http"}
		runFixtures(t, "fixture-j", names...)
		for _, name := range names {
			res := runFixture(t, "fixture-j", name, false)
			if failed := byVerdict(res)[history.CheckFailed]; len(failed) > 0 {
				t.Errorf("%s: failed %q on a correct tools-only gateway", name, failed)
			}
			if name == "restart/legacy/streamable-http" {
				wantCheck(t, res, "restart: beta's resource answers", history.CheckNotApplicable, "resources")
			}
		}
	})

	// (k) answers a backend's failure with an HTTP 200 JSON-RPC error of
	// code -32005 quoting "connection reset by peer": answered, never
	// dropped; its bounds and names pass.
	t.Run("k rpc error code", func(t *testing.T) {
		t.Parallel()
		names := []string{"wrapping/legacy/streamable-http", "hang/legacy/streamable-http"}
		runFixtures(t, "fixture-k", names...)
		for _, name := range names {
			res := runFixture(t, "fixture-k", name, false)
			if failed := byVerdict(res)[history.CheckFailed]; len(failed) > 0 {
				t.Errorf("%s: failed %q on a gateway that answers every failure", name, failed)
			}
			for _, e := range res.Events {
				if e.Call != nil && e.Call.Outcome == history.OutcomeDropped && e.Call.RPCCode != nil {
					t.Errorf("%s: %s %s answered with code %d recorded as dropped", name, e.Call.Method, e.Call.Target, *e.Call.RPCCode)
				}
			}
		}
	})

	// (l) declares a breaker whose circuit never opens: "opens" fails (its
	// promise), and the checks of an open, half-open, closed circuit are
	// inconclusive, never passed.
	t.Run("l breaker never opens", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-l", "breaker/legacy/streamable-http", false)
		if v := verdictOf(res, "the circuit opens after 3 failed calls"); v != history.CheckFailed {
			t.Errorf("the circuit opens: %s, want failed", v)
		}
		for _, name := range []string{"while open, calls fail fast naming beta", "the trial call in half-open succeeds", "health API: the circuit closes after a successful trial"} {
			wantCheck(t, res, name, history.CheckInconclusive, "never seen open")
		}
	})

	// (m) never resumes a backend's stream: the forged answer sent on the
	// resumed stream was never sent, so its check is inconclusive.
	t.Run("m never resumes", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-m", "wrapping/legacy/streamable-http", false)
		wantCheck(t, res, "forged-resumed: the forged answer never reaches the client", history.CheckInconclusive, "never resumed")
	})

	// (n) forwards a cancel 1 time in 8: judged over trials, it fails,
	// saying how many were forwarded.
	t.Run("n cancels 1 in 8", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-n", "hang-cancel/legacy/streamable-http", false)
		wantCheck(t, res, "beta (a legacy backend session) receives notifications/cancelled for the stalled call within 3 s of the cancel", history.CheckFailed, "forwarded 1 of 5")
	})

	// (d) drops beta for 500 ms after an error and answers its tools "not
	// found" without reaching it: the breaker's failing calls 2 and 3,
	// right after the first, fail naming beta, filed under "an unhealthy
	// backend's errors still name it" (issue 41).
	t.Run("d unhealthy named", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-d", "breaker/legacy/streamable-http", false)
		n := 0
		for _, c := range res.Checks {
			if c.Verdict == history.CheckFailed && c.Property == history.PropUnhealthyNamed {
				n++
			}
		}
		if n == 0 {
			t.Errorf("no failed check filed under %q: %v", history.PropUnhealthyNamed, byVerdict(res)[history.CheckFailed])
		}
	})

	// (p) drops beta for 8 s after it restarts (issue 41): with its
	// profile's recovery window (12 s) every check of the restart scenario
	// is judged, and beta's recoveries fail (a true finding); without the
	// window, the steps after each failed recovery are not judged.
	t.Run("p slow recovery", func(t *testing.T) {
		t.Parallel()
		const name = "restart/legacy/streamable-http"
		judged := func(res history.ScenarioResult) (judged, all int) {
			for _, c := range res.Checks {
				if c.Verdict == history.CheckNotApplicable {
					continue
				}
				all++
				if c.Verdict == history.CheckPassed || c.Verdict == history.CheckFailed {
					judged++
				}
			}
			return judged, all
		}
		// wrapping: ten fault steps, each waiting 8 s for the gateway's
		// recovery, 80 s in a scenario of 60 s: that wait is the
		// gateway's time (AwaitRecovery), never the budget's.
		runFixtures(t, "fixture-p", name, "wrapping/legacy/streamable-http")
		for _, sc := range []string{name, "wrapping/legacy/streamable-http"} {
			res := runFixture(t, "fixture-p", sc, false)
			if n, all := judged(res); n < all*9/10 {
				t.Errorf("%s: with the recovery window declared, %d of %d applicable checks judged, want at least 90%%: %v", sc, n, all, byVerdict(res))
			}
			for _, f := range byVerdict(res)[history.CheckFailed] {
				if !recoveryCheck.MatchString(f) {
					t.Errorf("%s: %q failed: only the backends' slow recoveries should", sc, f)
				}
			}
			for _, c := range res.Checks {
				if strings.Contains(c.Reason, "budget ran out") {
					t.Errorf("%s: %q inconclusive: %s (the waits for the declared recovery are the gateway's time)", sc, c.Name, c.Reason)
				}
			}
		}
		e := fixtureTarget(t, "fixture-p")
		e.TargetName, e.Recovery = "fixture-p-no-window", 0
		bare := runScenario(context.Background(), scenario(t, name), runner.RunConfig{Target: e, CheckLeaks: true}).Result()
		if n, all := judged(bare); n >= all*9/10 {
			t.Errorf("without the window, %d of %d checks judged: the window makes no difference", n, all)
		}
	})

	// (o) an SSE backend never served again after a restart, each call held
	// until the gateway's own 5 s timeout: the scenario's budget is not
	// blamed on the gateway, and every reason not to judge is true.
	t.Run("o budget", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-o", "restart/legacy/sse", false)
		for _, c := range res.Checks {
			switch {
			case c.Verdict == history.CheckFailed && c.Name != "restart: beta answers again (at most 1 failed calls)":
				t.Errorf("%q failed (%s): only beta's recovery from the restart fails", c.Name, c.Observed)
			case c.Verdict == history.CheckInconclusive && !strings.Contains(c.Reason, "budget ran out") &&
				!strings.Contains(c.Reason, "did not recover") && !strings.Contains(c.Reason, "no steady state"):
				t.Errorf("%q inconclusive for %q", c.Name, c.Reason)
			case c.Verdict == history.CheckInconclusive && strings.Contains(c.Reason, "no steady state") && !strings.Contains(c.Reason, "timed out"):
				t.Errorf("%q inconclusive for %q: want the gateway's own error as the reason", c.Name, c.Reason)
			}
		}
		if c := checkOf(res, "restart: beta answers again (at most 1 failed calls)"); c.Verdict != history.CheckFailed {
			t.Errorf("restart: beta answers again: %s (%s), want failed", c.Verdict, c.Reason)
		}
	})

	// (q) opens a fresh backend session for every call with
	// server/discover, not initialize (issue 41): the initialize-path
	// faults are aimed at that opener and judged, never "not applicable";
	// it names beta on a failed opening, so the naming checks pass.
	t.Run("q per-call discover", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-q", "wrapping/legacy/streamable-http", false)
		n := 0
		for _, c := range res.Checks {
			if !initializePath.MatchString(c.Name) {
				continue
			}
			n++
			switch {
			case c.Verdict == history.CheckNotApplicable || c.Verdict == history.CheckFailed:
				t.Errorf("%q: %s (%s%s), want judged and passed: the opener is server/discover", c.Name, c.Verdict, c.Reason, c.Observed)
			case strings.HasSuffix(c.Name, "names beta") && c.Verdict != history.CheckPassed:
				t.Errorf("%q: %s (%s), want passed", c.Name, c.Verdict, c.Reason)
			}
		}
		if n != 2*len(scenarios.InitializePathFaults) {
			t.Errorf("%d initialize-path checks recorded, want %d", n, 2*len(scenarios.InitializePathFaults))
		}
	})

	// (r) a health API that reports every backend healthy (issue 41): "the
	// health API tells the truth" fails while beta is down (its listener
	// closed, proven), filed under that property; once beta is back the
	// lie happens to be the truth.
	t.Run("r health API lies", func(t *testing.T) {
		t.Parallel()
		res := runFixture(t, "fixture-r", "health/legacy/streamable-http", false)
		wantCheck(t, res, "health API: beta is not reported serving while it is down", history.CheckFailed, `still reported beta "healthy"`)
		if c := checkOf(res, "health API: beta is not reported serving while it is down"); c.Property != history.PropHealthTruth {
			t.Errorf("filed under %q, want %q", c.Property, history.PropHealthTruth)
		}
		wantCheck(t, res, "health API: beta is reported serving again once it is back", history.CheckPassed, "")
	})

	// (s) refuses every 2026-07-28 request (-32022) while server/discover
	// lists 2026-07-28 (issue 41): the modern variant fails "every
	// protocol revision the gateway advertises is served"; its 2025-11-25
	// clients are served. Fixture g advertises neither (server/discover
	// -32601, every client agreed 2025-06-18): not applicable, saying so.
	t.Run("s refuses the newest revision", func(t *testing.T) {
		t.Parallel()
		modern := runFixture(t, "fixture-s", "revisions/modern/streamable-http", false)
		const newest = "the advertised revision 2026-07-28 is served: a client of it initializes and calls both backends' echo"
		wantCheck(t, modern, newest, history.CheckFailed, "unsupported protocol version")
		if c := checkOf(modern, newest); c.Property != history.PropRevisions {
			t.Errorf("filed under %q, want %q", c.Property, history.PropRevisions)
		}
		legacy := runFixture(t, "fixture-s", "revisions/legacy/streamable-http", false)
		wantCheck(t, legacy, "the advertised revision 2025-11-25 is served: a client of it initializes and calls both backends' echo", history.CheckPassed, "")
		old := runFixture(t, "fixture-g", "revisions/modern/streamable-http", false)
		wantCheck(t, old, newest, history.CheckNotApplicable, "does not advertise 2026-07-28")
	})
}
